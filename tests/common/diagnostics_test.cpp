// Tests for the shared user-error report format: every line names path, value, problem and fix.
#include <gtest/gtest.h>

#include "runtime/common/diagnostics.h"

namespace zt {
namespace {

TEST(Diagnostics, FormatsPathValueMessageAndFix) {
  Diagnostics d;
  d.error("zero_optimization.stage", "4", "stage must be 0, 1, 2 or 3", "set \"stage\": 3 for parameter partitioning");
  EXPECT_EQ(d.format(),
            "error: zero_optimization.stage = 4: stage must be 0, 1, 2 or 3. Fix: set \"stage\": 3 for "
            "parameter partitioning\n");
}

TEST(Diagnostics, CountsErrorsAndWarningsSeparately) {
  Diagnostics d;
  EXPECT_FALSE(d.has_errors());
  d.warning("activation_checkpointing", "", "has no effect without --recompute");
  EXPECT_FALSE(d.has_errors());
  EXPECT_EQ(d.warning_count(), 1u);
  d.error("fp16.enabled", "true", "fp16 and bf16 are both enabled", "enable only one");
  EXPECT_TRUE(d.has_errors());
  EXPECT_EQ(d.error_count(), 1u);
  EXPECT_EQ(d.all().size(), 2u);
}

TEST(Diagnostics, OmitsEmptyPartsWithoutDanglingSeparators) {
  Diagnostic w{Severity::Warning, "", "", "nothing to say", ""};
  EXPECT_EQ(format_diagnostic(w), "warning: nothing to say");
  Diagnostic p{Severity::Error, "data/train.bin", "", "file is empty", ""};
  EXPECT_EQ(format_diagnostic(p), "error: data/train.bin: file is empty");
}

TEST(Diagnostics, UserErrorCarriesEveryDiagnosticAndTheFirstAsWhat) {
  Diagnostics d;
  d.error("a", "1", "first");
  d.error("b", "2", "second");
  UserError e(d);
  EXPECT_EQ(e.diagnostics().error_count(), 2u);
  EXPECT_STREQ(e.what(), "error: a = 1: first");
  UserError single("train.bin", "offset 0", "bad magic 7", "regenerate the shard");
  EXPECT_EQ(single.diagnostics().error_count(), 1u);
}

}  // namespace
}  // namespace zt
