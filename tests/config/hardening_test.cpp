// Inputs that once crashed or hung the config reader (issue 15): deep nesting, FIFOs and devices,
// huge files, a 10 MB key, 300,000 unknown or duplicate keys, NUL bytes in keys. Each must end at
// once with a clean, bounded report.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "runtime/config/config_walk.h"
#include "runtime/config/json_strict.h"
#include "runtime/config/report.h"
#include "tests/config/config_test_util.h"

namespace zt {
namespace {

using test::find;
using test::load;

TEST(Hardening, DeepNestingIsRefusedAtParseTime) {
  const std::string text = std::string(52000, '[') + std::string(52000, ']');  // 104 KB, 52,000 levels
  const auto r = load(text);
  ASSERT_EQ(r.diagnostics.error_count(), 1u) << test::dump(r);
  const Diagnostic& d = r.diagnostics.all()[0];
  EXPECT_EQ(d.path, "test.json:1:" + std::to_string(kMaxConfigDepth + 1));
  EXPECT_NE(d.message.find("nested more than 100 levels deep"), std::string::npos) << d.message;
  // Brackets inside strings do not count; nesting at the bound still parses.
  const auto ok = load("{\"train_micro_batch_size_per_gpu\": 1, \"_note\": \"" + std::string(500, '[') + "\", \"x\": " +
                       std::string(kMaxConfigDepth - 1, '[') + std::string(kMaxConfigDepth - 1, ']') + "}");
  EXPECT_EQ(find(ok, "test.json:1:1", "nested"), nullptr) << test::dump(ok);
  EXPECT_NE(find(ok, "x", "unknown key"), nullptr) << test::dump(ok);
}

TEST(Hardening, ShowValueIsBoundedAndNeverRecursesDeep) {
  nlohmann::json deep = nlohmann::json::array();
  for (int i = 0; i < 90; ++i) deep = nlohmann::json::array({deep});
  EXPECT_LE(show_value(deep).size(), 60u);
  EXPECT_LE(show_value(nlohmann::json(std::string(10 << 20, 'x'))).size(), 60u);
  EXPECT_EQ(show_value(nlohmann::json(std::string("a\0b", 3))), "\"a\\u0000b\"");
  nlohmann::json wide = nlohmann::json::object();
  for (int i = 0; i < 100000; ++i) wide["k" + std::to_string(i)] = i;
  EXPECT_LE(show_value(wide).size(), 60u);
}

class ConfigFiles : public ::testing::Test {
 protected:
  std::string path(const std::string& name) { return ::testing::TempDir() + "zt_hardening_" + name; }
};

TEST_F(ConfigFiles, FifoIsRefusedWithoutBlocking) {
  const std::string p = path("fifo");
  std::remove(p.c_str());
  ASSERT_EQ(mkfifo(p.c_str(), 0600), 0);
  const auto r = load_config(p, {});  // no writer: reading it would block forever
  EXPECT_NE(find(r, p, "is a FIFO (named pipe), not a config file"), nullptr) << test::dump(r);
  std::remove(p.c_str());
}

TEST_F(ConfigFiles, DevicesAndDirectoriesAreRefused) {
  auto r = load_config("/dev/zero", {});  // would grow without limit
  EXPECT_NE(find(r, "/dev/zero", "is a character device"), nullptr) << test::dump(r);
  r = load_config("/tmp", {});
  EXPECT_NE(find(r, "/tmp", "is a directory"), nullptr) << test::dump(r);
  r = load_config("/nonexistent/ds.json", {});
  EXPECT_NE(find(r, "/nonexistent/ds.json", "No such file or directory"), nullptr) << test::dump(r);
}

TEST_F(ConfigFiles, FileOverTheCapIsRefusedWithItsSize) {
  const std::string p = path("big.json");
  {
    std::ofstream out(p, std::ios::binary);
    out << "{\"_pad\": \"" << std::string(17 << 20, ' ') << "\"}";
  }
  const auto r = load_config(p, {});
  const Diagnostic* d = find(r, p, "zerotrain reads at most 16.0 MiB");
  ASSERT_NE(d, nullptr) << test::dump(r);
  EXPECT_NE(d->message.find("is 17825804 bytes (17.0 MiB)"), std::string::npos) << d->message;
  std::remove(p.c_str());
}

TEST(Hardening, TenMegabyteKeyGivesOneShortMessage) {
  const std::string key(10 << 20, 'a');
  const auto r = load("{\"train_micro_batch_size_per_gpu\": 1, \"" + key + "\": 1}");
  ASSERT_EQ(r.diagnostics.error_count(), 1u) << r.diagnostics.all().size();
  const Diagnostic& d = r.diagnostics.all()[0];
  EXPECT_EQ(d.path, std::string(48, 'a') + "...(10485760 bytes)");
  EXPECT_LT(format_diagnostic(d).size(), 2000u);
  EXPECT_NE(d.message.find("unknown key"), std::string::npos);
}

TEST(Hardening, ThreeHundredThousandUnknownKeysAreCounted) {
  std::string text = "{\"train_micro_batch_size_per_gpu\": 1";
  for (int i = 0; i < 300000; ++i) text += ", \"k" + std::to_string(i) + "\": 0";
  text += "}";
  const auto r = load(text);
  EXPECT_EQ(r.diagnostics.error_count(), kMaxUnknownListed + 1);
  EXPECT_NE(find(r, "test.json", "and 299900 more unknown keys"), nullptr);
  EXPECT_LT(format_report(r.diagnostics).size(), 100000u);
  // Duplicates are capped the same way.
  std::string dup = "{\"train_micro_batch_size_per_gpu\": 1";
  for (int i = 0; i < 300000; ++i) dup += ", \"steps_per_print\": 1";
  const auto d = load(dup + "}");
  EXPECT_NE(find(d, "test.json", "and 299899 more duplicate keys"), nullptr) << d.diagnostics.all().size();
  EXPECT_LE(d.diagnostics.error_count(), 102u);
}

TEST(Hardening, NulByteNeverCutsTheReportShort) {
  // The key "bad<NUL>key" (JSON \u0000), a type error and a batch error: three problems, three lines.
  const auto r = load(R"({"bad\u0000key": 1, "steps_per_print": "x", "train_batch_size": 0})");
  ASSERT_EQ(r.diagnostics.error_count(), 3u) << test::dump(r);
  const std::string report = format_report(r.diagnostics);
  EXPECT_EQ(report.find('\0'), std::string::npos);
  EXPECT_EQ(std::count(report.begin(), report.end(), '\n'), 3);
  EXPECT_NE(report.find("bad\\u0000key"), std::string::npos) << report;
  const auto j = diagnostics_json(r.diagnostics, Severity::Error);
  EXPECT_EQ(j.size(), 3u);
  EXPECT_NO_THROW((void)j.dump());
}

TEST(Hardening, ReportIsCapped) {
  Diagnostics d;
  for (int i = 0; i < 250; ++i) d.error("k" + std::to_string(i), "", "bad");
  d.warning("w", "", "note");
  const std::string report = format_report(d);
  EXPECT_EQ(std::count(report.begin(), report.end(), '\n'), long(kMaxShownDiagnostics) + 1);
  EXPECT_NE(report.find("... and 50 more error(s) and 1 more warning(s) not shown"), std::string::npos);
}

}  // namespace
}  // namespace zt
