// The run's guards, one process: the fingerprint report of ranks that disagree, outputs that fail
// (an unwritable path, /dev/full) and leave nothing behind, and stop signals recorded for the boundary.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "collectives/rank_list.h"
#include "kernels/backend.h"
#include "runtime/common/diagnostics.h"
#include "runtime/data/synthetic.h"
#include "runtime/model/model_config.h"
#include "runtime/common/output_file.h"
#include "runtime/train/job_report.h"
#include "runtime/train/run_fingerprint.h"
#include "runtime/train/stop_signals.h"

namespace zt {
namespace {

namespace fs = std::filesystem;

std::string text(const std::vector<std::pair<std::string, std::string>>& items) {
  RunFingerprint f;
  f.items = items;
  return f.text();
}

TEST(RunFingerprint, ReportNamesEachDifferingKeyAndTheRanksOfEachValue) {
  const std::string a = text({{"config.train_micro_batch_size_per_gpu", "4"}, {"config.zero_optimization.stage", "2"}, {"run.seed", "1"}});
  const std::string b = text({{"config.train_micro_batch_size_per_gpu", "8"}, {"config.zero_optimization.stage", "2"}, {"run.seed", "1"}});
  const std::string c = text({{"config.train_micro_batch_size_per_gpu", "4"}, {"config.zero_optimization.stage", "3"}});
  EXPECT_FALSE(fingerprint_differences({a, a, a}).has_errors());
  const Diagnostics d = fingerprint_differences({a, b, b, b, c});
  ASSERT_EQ(d.error_count(), 3u) << d.format();
  EXPECT_EQ(d.all()[0].path, "config.train_micro_batch_size_per_gpu");
  EXPECT_EQ(d.all()[0].message, "the ranks disagree: 4 on ranks 0, 4; 8 on ranks 1-3");
  EXPECT_EQ(d.all()[1].path, "config.zero_optimization.stage");
  EXPECT_EQ(d.all()[1].message, "the ranks disagree: 2 on ranks 0-3; 3 on rank 4");
  EXPECT_EQ(d.all()[2].path, "run.seed");
  EXPECT_EQ(d.all()[2].message, "the ranks disagree: 1 on ranks 0-3; (not set) on rank 4");
  EXPECT_NE(d.all()[0].fix.find("MPMD"), std::string::npos);
  // The report is capped: the first keys, then a count of the rest.
  std::vector<std::pair<std::string, std::string>> many_a, many_b;
  for (int i = 0; i < 30; ++i) {
    many_a.push_back({"k" + std::to_string(100 + i), "x"});
    many_b.push_back({"k" + std::to_string(100 + i), "y"});
  }
  const Diagnostics capped = fingerprint_differences({text(many_a), text(many_b)}, 5);
  ASSERT_EQ(capped.error_count(), 6u);
  EXPECT_EQ(capped.all()[5].message, "25 more key(s) differ between the ranks");
}

TEST(RunFingerprint, CoversConfigModelDataSeedAndFlags) {
  RunOptions o;
  o.model = *model_preset("tiny");
  o.flags.steps = 5;
  const Config c = load_run_config(o, 1, ComputeBackend::Cpu).config;
  const TokenDataset data = make_synthetic_dataset(1, 4096, 512);
  auto backend = make_cpu_backend();
  const RunFingerprint f = make_run_fingerprint(o, c, data, *backend);
  std::map<std::string, std::string> m(f.items.begin(), f.items.end());
  for (const char* k : {"config.zero_optimization.stage", "config.train_micro_batch_size_per_gpu", "config.bf16.enabled",
                        "model.dim", "model.vocab", "run.seed", "run.steps", "run.backend", "data.train", "data.val"})
    EXPECT_TRUE(m.count(k)) << k << " is not in the fingerprint:\n" << f.text();
  RunOptions o2 = o;
  o2.seed = 2;
  EXPECT_NE(make_run_fingerprint(o2, c, data, *backend).hash(), f.hash());
}

TEST(RankList, CollapsesRuns) {
  EXPECT_EQ(rank_list({3}), "rank 3");
  EXPECT_EQ(rank_list({0, 1}), "ranks 0, 1");
  EXPECT_EQ(rank_list({0, 1, 2, 3, 5, 7, 8}), "ranks 0-3, 5, 7, 8");
}

// One copy of each message: a line every rank holds prints plain once; a line some ranks hold carries
// them; the order is the order ranks first hold the lines; a line held twice stays twice.
TEST(JobReport, MergesEqualLinesAndNamesTheRanksOfTheOthers) {
  const std::string same = "warning: a: x\nerror: b: y\n";
  EXPECT_EQ(merge_rank_texts({same, same, same, same}), same);
  EXPECT_EQ(merge_rank_texts({same}), same);
  EXPECT_EQ(merge_rank_texts({"", "", "", ""}), "");
  EXPECT_EQ(merge_rank_texts({"", "", "", "error: disk full\n"}), "rank 3: error: disk full\n");
  EXPECT_EQ(merge_rank_texts({"error: c\nw\n", "error: d\nw\n", "error: c\nw\n", "w\n"}),
            "ranks 0, 2: error: c\nw\nrank 1: error: d\n");
  EXPECT_EQ(merge_rank_texts({"x\nx\n", "x\n"}), "x\nrank 0: x\n");
  EXPECT_EQ(merge_rank_texts({"a\n", "a\n", "a\n", "b\n", "b\n", "b\n", "a\n", "a\n"}), "ranks 0-2, 6, 7: a\nranks 3-5: b\n");
}

TEST(JobReport, FailureTextAndExitCodeOfEachKind) {
  FailureText f = describe_failure(std::make_exception_ptr(UserError("--steps", "0", "must be at least 1", "pass 1")));
  EXPECT_EQ(f.exit_code, kUserErrorExit);
  EXPECT_EQ(f.text, "error: --steps = 0: must be at least 1. Fix: pass 1\nzerotrain: 1 error(s); stopped before training.\n");
  f = describe_failure(std::make_exception_ptr(std::runtime_error("boom")));
  EXPECT_EQ(f.exit_code, 1);
  EXPECT_EQ(f.text, "zerotrain: fatal: boom\n");
  f = describe_failure(std::make_exception_ptr(ReportedError(3)));
  EXPECT_EQ(f.exit_code, 3);
  EXPECT_EQ(f.text, "");
  EXPECT_EQ(describe_failure(nullptr).exit_code, 0);
}

TEST(OutputFile, DevFullFailsWithPathAndErrno) {
  OutputFile f("--metrics", "/dev/full");
  try {
    f.line("{\"event\": \"start\"}");
    FAIL() << "a write to /dev/full succeeded";
  } catch (const OutputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--metrics /dev/full"), std::string::npos) << m;
    EXPECT_NE(m.find("No space left on device (errno 28)"), std::string::npos) << m;
  }
}

TEST(OutputFile, UnwritablePathIsAUserErrorAtOpen) {
  try {
    OutputFile f("--trace", "/nonexistent-dir/trace.json");
    FAIL() << "opened a file in a missing directory";
  } catch (const UserError& e) {
    EXPECT_EQ(e.diagnostics().all()[0].path, "--trace");
    EXPECT_EQ(e.diagnostics().all()[0].value, "/nonexistent-dir/trace.json");
    EXPECT_NE(e.diagnostics().all()[0].message.find("No such file or directory (errno 2)"), std::string::npos);
  }
}

TEST(OutputFile, AnUnusedNewFileIsRemovedAndAWrittenOneKept) {
  const fs::path dir = fs::temp_directory_path() / ("zt_output_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string unused = (dir / "unused.jsonl").string(), used = (dir / "used.jsonl").string();
  const std::string existing = (dir / "existing.jsonl").string();
  std::ofstream(existing) << "old";
  {
    OutputFile a("--metrics", unused);
    OutputFile b("--metrics", used);
    OutputFile c("--metrics", existing);
    EXPECT_TRUE(fs::exists(unused));
    b.line("x");
    b.close();
  }
  EXPECT_FALSE(fs::exists(unused)) << "a run that stopped before writing left its output file";
  EXPECT_EQ(fs::file_size(used), 2u);
  EXPECT_TRUE(fs::exists(existing)) << "a file that was there before is not ours to remove";
  fs::remove_all(dir);
}

TEST(StopSignals, RecordsTheFirstSignalAndRestoresTheHandlers) {
  struct sigaction before {};
  sigaction(SIGTERM, nullptr, &before);
  {
    StopSignals s;
    EXPECT_EQ(s.pending(), 0);
    raise(SIGTERM);  // handled: the process goes on
    EXPECT_EQ(s.pending(), SIGTERM);
    EXPECT_STREQ(stop_signal_name(s.pending()), "SIGTERM");
  }
  struct sigaction after {};
  sigaction(SIGTERM, nullptr, &after);
  EXPECT_EQ(after.sa_handler, before.sa_handler);
  StopSignals again;
  EXPECT_EQ(again.pending(), 0) << "a new run starts with no stop request";
}

}  // namespace
}  // namespace zt
