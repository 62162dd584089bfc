// The batch equation: every DeepSpeed derivation branch, every failure, the exact DeepSpeed
// message prefix, at world sizes 1, 2, 3, 4, 8 and 64 (table-driven).
#include <gtest/gtest.h>

#include <regex>

#include "tests/config/config_test_util.h"

namespace zt {
namespace {

constexpr const char* kPrefix =
    "Check batch related parameters. train_batch_size is not equal to micro_batch_per_gpu * gradient_acc_step * world_size ";

struct BatchCase {
  const char* name;
  const char* json;  // the batch keys only
  int world;
  int64_t T, M, G;           // expected when valid
  const char* error_path;    // "" when valid
  const char* error_text;    // substring of the message when invalid
};

const BatchCase kCases[] = {
    // T + M -> G = (T // M) // W
    {"TM_w1", R"("train_batch_size": 32, "train_micro_batch_size_per_gpu": 4)", 1, 32, 4, 8, "", ""},
    {"TM_w2", R"("train_batch_size": 32, "train_micro_batch_size_per_gpu": 4)", 2, 32, 4, 4, "", ""},
    {"TM_w3", R"("train_batch_size": 36, "train_micro_batch_size_per_gpu": 4)", 3, 36, 4, 3, "", ""},
    {"TM_w4", R"("train_batch_size": 32, "train_micro_batch_size_per_gpu": 4)", 4, 32, 4, 2, "", ""},
    {"TM_w8", R"("train_batch_size": 64, "train_micro_batch_size_per_gpu": 2)", 8, 64, 2, 4, "", ""},
    {"TM_w64", R"("train_batch_size": 128, "train_micro_batch_size_per_gpu": 1)", 64, 128, 1, 2, "", ""},
    {"TM_truncates_mismatch", R"("train_batch_size": 30, "train_micro_batch_size_per_gpu": 4)", 2, 0, 0, 0,
     "train_batch_size", "30 != 4 * 3 * 2"},
    {"TM_w3_truncates", R"("train_batch_size": 32, "train_micro_batch_size_per_gpu": 4)", 3, 0, 0, 0,
     "train_batch_size", "32 != 4 * 2 * 3"},
    {"TM_G_zero", R"("train_batch_size": 4, "train_micro_batch_size_per_gpu": 8)", 1, 0, 0, 0,
     "gradient_accumulation_steps", "Gradient accumulation steps: 0 has to be greater than 0"},
    {"TM_G_zero_w4", R"("train_batch_size": 8, "train_micro_batch_size_per_gpu": 4)", 4, 0, 0, 0,
     "gradient_accumulation_steps", "(8 // 4) // 4"},
    // T + G -> M = (T // W) // G
    {"TG_w1", R"("train_batch_size": 32, "gradient_accumulation_steps": 4)", 1, 32, 8, 4, "", ""},
    {"TG_w2", R"("train_batch_size": 32, "gradient_accumulation_steps": 2)", 2, 32, 8, 2, "", ""},
    {"TG_w3", R"("train_batch_size": 96, "gradient_accumulation_steps": 1)", 3, 96, 32, 1, "", ""},
    {"TG_w4", R"("train_batch_size": 32, "gradient_accumulation_steps": 4)", 4, 32, 2, 4, "", ""},
    {"TG_w64", R"("train_batch_size": 64, "gradient_accumulation_steps": 1)", 64, 64, 1, 1, "", ""},
    {"TG_mismatch", R"("train_batch_size": 33, "gradient_accumulation_steps": 2)", 4, 0, 0, 0,
     "train_batch_size", "33 != 4 * 2 * 4"},
    {"TG_M_zero", R"("train_batch_size": 4, "gradient_accumulation_steps": 8)", 1, 0, 0, 0,
     "train_micro_batch_size_per_gpu", "Micro batch size per gpu: 0 has to be greater than 0"},
    // M + G -> T = M * G * W
    {"MG_w1", R"("train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2)", 1, 8, 4, 2, "", ""},
    {"MG_w3", R"("train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2)", 3, 24, 4, 2, "", ""},
    {"MG_w8", R"("train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1)", 8, 8, 1, 1, "", ""},
    {"MG_w64", R"("train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 8)", 64, 1024, 2, 8, "", ""},
    // T alone -> G = 1, M = T // W
    {"T_w1", R"("train_batch_size": 32)", 1, 32, 32, 1, "", ""},
    {"T_w4", R"("train_batch_size": 32)", 4, 32, 8, 1, "", ""},
    {"T_w3", R"("train_batch_size": 33)", 3, 33, 11, 1, "", ""},
    {"T_w64", R"("train_batch_size": 64)", 64, 64, 1, 1, "", ""},
    {"T_mismatch_w4", R"("train_batch_size": 30)", 4, 0, 0, 0, "train_batch_size", "30 != 7 * 1 * 4"},
    {"T_M_zero_w4", R"("train_batch_size": 3)", 4, 0, 0, 0, "train_micro_batch_size_per_gpu", "has to be greater than 0"},
    // M alone -> T = M * W, G = 1
    {"M_w1", R"("train_micro_batch_size_per_gpu": 4)", 1, 4, 4, 1, "", ""},
    {"M_w2", R"("train_micro_batch_size_per_gpu": 4)", 2, 8, 4, 1, "", ""},
    {"M_w3", R"("train_micro_batch_size_per_gpu": 3)", 3, 9, 3, 1, "", ""},
    {"M_w64", R"("train_micro_batch_size_per_gpu": 1)", 64, 64, 1, 1, "", ""},
    // All three
    {"TMG_ok_w2", R"("train_batch_size": 32, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 4)", 2, 32, 4, 4, "", ""},
    {"TMG_ok_w4", R"("train_batch_size": 8, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1)", 4, 8, 2, 1, "", ""},
    {"TMG_ok_w3", R"("train_batch_size": 24, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 4)", 3, 24, 2, 4, "", ""},
    {"TMG_ok_w64", R"("train_batch_size": 1024, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 4)", 64, 1024, 4, 4, "", ""},
    {"TMG_issue_example", R"("train_batch_size": 32, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 4)", 4, 0, 0, 0,
     "train_batch_size", "32 != 4 * 4 * 4"},
    {"TMG_mismatch_w8", R"("train_batch_size": 100, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 4)", 8, 0, 0, 0,
     "train_batch_size", "100 != 4 * 4 * 8"},
    {"TMG_mismatch_w1", R"("train_batch_size": 16, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2)", 1, 0, 0, 0,
     "train_batch_size", "16 != 4 * 2 * 1"},
    // Nothing usable
    {"G_alone", R"("gradient_accumulation_steps": 4)", 1, 0, 0, 0, "train_batch_size",
     "Either train_batch_size or train_micro_batch_size_per_gpu needs to be provided"},
    {"none", R"("steps_per_print": 5)", 2, 0, 0, 0, "train_batch_size",
     "Either train_batch_size or train_micro_batch_size_per_gpu needs to be provided"},
    {"T_auto_alone", R"("train_batch_size": "auto")", 2, 0, 0, 0, "train_batch_size",
     "Either train_batch_size or train_micro_batch_size_per_gpu needs to be provided"},
    // Non-positive values
    {"T_zero", R"("train_batch_size": 0, "train_micro_batch_size_per_gpu": 4)", 1, 0, 0, 0, "train_batch_size", "greater than 0"},
    {"M_zero", R"("train_micro_batch_size_per_gpu": 0)", 1, 0, 0, 0, "train_micro_batch_size_per_gpu", "greater than 0"},
    {"M_negative", R"("train_micro_batch_size_per_gpu": -2)", 8, 0, 0, 0, "train_micro_batch_size_per_gpu", "greater than 0"},
    {"G_zero", R"("train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 0)", 2, 0, 0, 0, "gradient_accumulation_steps", "greater than 0"},
    {"T_negative", R"("train_batch_size": -32)", 4, 0, 0, 0, "train_batch_size", "greater than 0"},
    // Types DeepSpeed quietly accepts
    {"T_float", R"("train_batch_size": 32.0, "train_micro_batch_size_per_gpu": 4)", 1, 32, 4, 8, "", ""},  // integral: read as 32
    {"T_string", R"("train_batch_size": "32", "train_micro_batch_size_per_gpu": 4)", 1, 0, 0, 0, "train_batch_size", "must be an integer"},
    {"M_bool", R"("train_micro_batch_size_per_gpu": true)", 1, 0, 0, 0, "train_micro_batch_size_per_gpu", "must be an integer"},
    {"G_fraction", R"("train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2.5)", 1, 0, 0, 0, "gradient_accumulation_steps", "not a whole number"},
    {"M_null", R"("train_micro_batch_size_per_gpu": null)", 1, 0, 0, 0, "train_micro_batch_size_per_gpu", "must be an integer"},
    // "auto" batch keys
    {"T_auto_MG", R"("train_batch_size": "auto", "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 3)", 4, 24, 2, 3, "", ""},
};

// One CTest entry for the whole table (each case is its own scoped trace): the suite stays fast
// where every test process pays for loading the CUDA libraries.
void check_case(const BatchCase& c) {
  SCOPED_TRACE(c.name);
  LoadOptions o;
  o.world_size = c.world;
  o.world_source = WorldSizeSource::Flag;
  const auto r = test::load(std::string("{") + c.json + "}", o);
  if (std::string(c.error_path).empty()) {
    ASSERT_TRUE(r.valid()) << test::dump(r);
    EXPECT_EQ(r.config.train_batch_size.value, c.T);
    EXPECT_EQ(r.config.train_micro_batch_size_per_gpu.value, c.M);
    EXPECT_EQ(r.config.gradient_accumulation_steps.value, c.G);
    EXPECT_EQ(r.config.train_batch_size.value, c.M * c.G * c.world);
    EXPECT_EQ(r.config.world_size.value, c.world);
    return;
  }
  ASSERT_FALSE(r.valid());
  const Diagnostic* d = test::find(r, c.error_path, c.error_text);
  ASSERT_NE(d, nullptr) << "want " << c.error_path << ": " << c.error_text << "\ngot:\n" << test::dump(r);
  EXPECT_FALSE(d->fix.empty()) << test::dump(r);
  if (std::string(c.error_text).find("!=") != std::string::npos) {
    EXPECT_EQ(d->message.rfind(std::string(kPrefix) + c.error_text, 0), 0u) << d->message;
    EXPECT_NE(d->message.find("world_size " + std::to_string(c.world) + " (from --world-size)"), std::string::npos) << d->message;
  }
}

TEST(Batch, TableOfCases) {
  static_assert(std::size(kCases) >= 40);
  for (const auto& c : kCases) check_case(c);
  RecordProperty("cases", static_cast<int>(std::size(kCases)));
}

TEST(Batch, TableCoversEveryWorldSize) {
  for (int w : {1, 2, 3, 4, 8, 64}) {
    int n = 0;
    for (const auto& c : kCases) n += c.world == w;
    EXPECT_GE(n, 2) << "world size " << w;
  }
}

TEST(Batch, DerivedValuesSayHow) {
  LoadOptions o;
  o.world_size = 4;
  o.world_source = WorldSizeSource::Launch;
  const auto r = test::load(R"({"train_batch_size": 32, "train_micro_batch_size_per_gpu": 4})", o);
  ASSERT_TRUE(r.valid()) << test::dump(r);
  EXPECT_EQ(r.config.gradient_accumulation_steps.source.kind, SourceKind::Derived);
  EXPECT_NE(r.config.gradient_accumulation_steps.source.detail.find("(32 // 4) // 4"), std::string::npos);
  EXPECT_EQ(r.config.train_batch_size.source.kind, SourceKind::File);
  EXPECT_NE(r.config.world_size.source.describe().find("launch"), std::string::npos);
}

// Every suggestion the mismatch message makes must itself give a consistent config.
TEST(Batch, SuggestionsAreConsistent) {
  LoadOptions o;
  o.world_size = 4;
  o.world_source = WorldSizeSource::Flag;
  const auto r = test::load(R"({"train_batch_size": 32, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 4})", o);
  const Diagnostic* d = test::find(r, "train_batch_size", "Check batch related parameters");
  ASSERT_NE(d, nullptr);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(d->fix, m, std::regex("derived as 4 \\* 4 \\* 4 = (\\d+)")));
  EXPECT_EQ(m[1], "64");
  ASSERT_TRUE(std::regex_search(d->fix, m, std::regex("set gradient_accumulation_steps to (\\d+)")));
  auto r2 = test::load("{\"train_batch_size\": 32, \"train_micro_batch_size_per_gpu\": 4, \"gradient_accumulation_steps\": " +
                           m[1].str() + "}", o);
  EXPECT_TRUE(r2.valid()) << test::dump(r2);
  ASSERT_TRUE(std::regex_search(d->fix, m, std::regex("set train_micro_batch_size_per_gpu to (\\d+)")));
  r2 = test::load("{\"train_batch_size\": 32, \"train_micro_batch_size_per_gpu\": " + m[1].str() +
                      ", \"gradient_accumulation_steps\": 4}", o);
  EXPECT_TRUE(r2.valid()) << test::dump(r2);
  r2 = test::load(R"({"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 4})", o);
  EXPECT_TRUE(r2.valid());
  EXPECT_EQ(r2.config.train_batch_size.value, 64);
}

TEST(Batch, TruncatedSuggestionIsAMultiple) {
  LoadOptions o;
  o.world_size = 2;
  o.world_source = WorldSizeSource::Flag;
  const auto r = test::load(R"({"train_batch_size": 30, "train_micro_batch_size_per_gpu": 4})", o);
  const Diagnostic* d = test::find(r, "train_batch_size", "multiple of train_micro_batch_size_per_gpu * world_size = 8");
  ASSERT_NE(d, nullptr) << test::dump(r);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(d->fix, m, std::regex("e\\.g\\. (\\d+) or (\\d+)")));
  for (int i = 1; i <= 2; ++i) {
    auto r2 = test::load("{\"train_batch_size\": " + m[i].str() + ", \"train_micro_batch_size_per_gpu\": 4}", o);
    EXPECT_TRUE(r2.valid()) << m[i] << "\n" << test::dump(r2);
  }
}

}  // namespace
}  // namespace zt
