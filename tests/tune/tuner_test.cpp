// The Tuner against synthetic worlds: a planner whose memory grows with the micro batch and a runner
// whose tokens/s is a known function of the trial, so that every claim of the search is checked
// against the answer: the argmax, early stopping, the cap, latency minimised, failures by exit code,
// timeouts, a deterministic pick, reuse of earlier results; plus the autotuning block, the batch
// policy, trial configs and the process runner's exit-code rule.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <fstream>
#include <map>
#include <set>

#include "base/check.h"
#include "runtime/tune/trial_process.h"
#include "runtime/tune/tune_report.h"
#include "runtime/tune/tuner.h"

namespace zt {
namespace {

// Memory: 100 + 10·mbs MiB (stage 3: 60 + 10·mbs, offload: −20); fits below `limit`.
struct FakePlanner : TunePlanner {
  double limit_mib = 1000;
  std::set<int> refuse_stage;  // cells the plan refuses outright
  int calls = 0;
  PlanVerdict assess(const TrialSpec& t) override {
    ++calls;
    PlanVerdict v;
    double mib = (t.cell.stage == 3 ? 60 : 100) + 10.0 * double(t.micro_batch);
    if (t.cell.offload != OffloadDevice::None) mib -= 20;
    v.peak_bytes = mib * 1048576;
    v.fits = mib <= limit_mib && !refuse_stage.count(t.cell.stage);
    if (refuse_stage.count(t.cell.stage)) v.reason = "refused by the fake plan";
    else if (!v.fits) v.reason = "does not fit";
    v.tokens_per_step = double(t.micro_batch * t.gas) * 64;
    v.wire_bytes_per_step = 1e6 * (t.cell.stage == 3 ? 1.5 : 1.0);
    v.flops_per_token = 1e6;
    return v;
  }
};

// tokens/s = f(trial); status by a rule; records every run.
struct FakeRunner : TrialRunner {
  std::function<double(const TrialSpec&)> rate = [](const TrialSpec& t) { return 1000.0 * double(t.micro_batch); };
  std::function<TrialOutcome(const TrialSpec&)> fail;  // returns a non-ok outcome, or Ok to run normally
  std::vector<std::string> ran;
  TrialOutcome run(const TrialSpec& t, int repeat) override {
    ran.push_back(t.name() + "#" + std::to_string(repeat));
    if (fail) {
      TrialOutcome f = fail(t);
      if (f.status != TrialStatus::Ok) return f;
    }
    TrialOutcome o;
    o.status = TrialStatus::Ok;
    o.tokens_per_s = rate(t);
    o.step_ms = 1e3 * double(t.micro_batch * t.gas * 64) / o.tokens_per_s;
    o.measured_peak_bytes = 0;
    o.comm_bytes_per_step = 1e6;
    o.comm_busy_s_per_step = 1e-4;
    o.wall_s = 1;
    return o;
  }
};

TuneSetup setup_for(std::vector<int> stages, int64_t max_micro = 64) {
  TuneSetup s;
  for (int st : stages) s.cells.push_back(TuneCell{st, OffloadDevice::None});
  s.batch.world_size = 2;
  s.batch.max_micro = max_micro;
  s.params = 1000000;
  s.repeats = 1;
  return s;
}

TEST(Tuner, FindsTheArgmaxAndNeverRunsWhatThePlanRejects) {
  FakePlanner plan;
  plan.limit_mib = 400;  // stages 0-2: mbs ≤ 30; stage 3: mbs ≤ 34
  plan.refuse_stage = {1};
  FakeRunner run;
  // Best: stage 2 at its largest micro batch.
  run.rate = [](const TrialSpec& t) { return double(t.micro_batch) * (t.cell.stage == 2 ? 1300 : 1000); };
  TuneSetup s = setup_for({0, 1, 2, 3});
  s.options.tuner_early_stopping = 100;
  Tuner tuner(s, plan, run);
  const TuneResult r = tuner.run();
  ASSERT_TRUE(r.best);
  EXPECT_EQ(r.rows[*r.best].spec.name(), "z2_gas1_tmbspg30");
  ASSERT_EQ(r.dropped.size(), 1u);
  EXPECT_EQ(r.dropped[0].cell.name(), "z1");
  EXPECT_EQ(r.dropped[0].reason, "refused by the fake plan");
  for (const auto& name : run.ran) EXPECT_EQ(name.find("z1_"), std::string::npos) << name;
  for (const auto& row : r.rows) EXPECT_LE(row.plan.peak_bytes, 400.0 * 1048576) << row.spec.name();
  // The largest fits found by the plan's bisection.
  std::map<std::string, int64_t> mx;
  for (const auto& [c, m] : r.max_micro) mx[c.name()] = m;
  EXPECT_EQ(mx["z0"], 30);
  EXPECT_EQ(mx["z3"], 34);
  // Fast mode: at most cells × (num_tuning_micro_batch_sizes + 1) trials.
  EXPECT_LE(r.trials, 3 * (s.options.num_tuning_micro_batch_sizes + 1));
}

TEST(Tuner, EarlyStoppingAndTheCap) {
  FakePlanner plan;
  FakeRunner run;
  run.rate = [](const TrialSpec&) { return 1000.0; };  // nothing ever gains 5%
  TuneSetup s = setup_for({0, 1, 2, 3});
  s.options.tuner_early_stopping = 3;
  {
    Tuner tuner(s, plan, run);
    const TuneResult r = tuner.run();
    EXPECT_EQ(r.trials, 4);  // the first sets the best, three more without a gain
    EXPECT_NE(r.stopped_because.find("early stopping"), std::string::npos) << r.stopped_because;
  }
  s.options.tuner_early_stopping = 100;
  s.options.tuner_num_trials = 5;
  FakeRunner run2;
  Tuner tuner(s, plan, run2);
  const TuneResult r = tuner.run();
  EXPECT_EQ(r.trials, 5);
  EXPECT_EQ(run2.ran.size(), 5u);
  EXPECT_NE(r.stopped_because.find("tuner_num_trials (5)"), std::string::npos) << r.stopped_because;
}

TEST(Tuner, LatencyIsMinimised) {
  FakePlanner plan;
  FakeRunner run;
  // Tokens/s grows with the micro batch but so does the step: latency wants the smallest step.
  run.rate = [](const TrialSpec& t) { return 1000.0 * std::sqrt(double(t.micro_batch)); };
  TuneSetup s = setup_for({0}, 16);
  s.options.metric = TuneMetric::Latency;
  s.options.tuner_early_stopping = 100;
  Tuner tuner(s, plan, run);
  const TuneResult r = tuner.run();
  ASSERT_TRUE(r.best);
  EXPECT_EQ(r.rows[*r.best].spec.micro_batch, 1);
  for (const auto& row : r.rows) EXPECT_GE(row.median_step_ms(), r.rows[*r.best].median_step_ms());
  // Throughput on the same world picks the largest.
  s.options.metric = TuneMetric::Throughput;
  FakeRunner run2;
  run2.rate = run.rate;
  Tuner t2(s, plan, run2);
  const TuneResult r2 = t2.run();
  EXPECT_EQ(r2.rows[*r2.best].spec.micro_batch, 16);
}

TEST(Tuner, FailuresComeFromTheStatusAndTimeoutsAreRecorded) {
  FakePlanner plan;
  FakeRunner run;
  run.fail = [](const TrialSpec& t) {
    TrialOutcome o;
    o.status = TrialStatus::Ok;
    if (t.micro_batch == 64) o.status = TrialStatus::Oom, o.exit_code = kOutOfMemoryExit;
    if (t.micro_batch == 32) o.status = TrialStatus::Timeout, o.exit_code = 128 + 15;
    if (t.micro_batch == 16) o.status = TrialStatus::Error, o.exit_code = 1;
    return o;
  };
  TuneSetup s = setup_for({0});
  s.options.tuner_early_stopping = 100;
  Tuner tuner(s, plan, run);
  const TuneResult r = tuner.run();
  ASSERT_TRUE(r.best);
  EXPECT_EQ(r.rows[*r.best].spec.micro_batch, 1);  // the only one that ran ok
  std::map<int64_t, TrialStatus> st;
  for (const auto& row : r.rows) st[row.spec.micro_batch] = row.runs[0].status;
  EXPECT_EQ(st[64], TrialStatus::Oom);
  EXPECT_EQ(st[32], TrialStatus::Timeout);
  EXPECT_EQ(st[16], TrialStatus::Error);
  const std::string table = tune_table(TuneReportInput{r, TuneMetric::Throughput, 2, nlohmann::json::object(), ""});
  EXPECT_NE(table.find("| timeout | 143 |"), std::string::npos) << table;
  EXPECT_NE(table.find("| oom | 4 |"), std::string::npos) << table;
}

TEST(Tuner, AFailureEveryTrialWouldRepeatStopsTheSearch) {
  FakePlanner plan;
  FakeRunner run;
  run.fail = [](const TrialSpec&) {
    TrialOutcome o;
    o.status = TrialStatus::Error;
    o.exit_code = 2;
    o.stops_search = true;
    o.detail = "error: the job refused its config";
    return o;
  };
  TuneSetup s = setup_for({0, 1, 2, 3});
  s.options.tuner_early_stopping = 100;
  Tuner tuner(s, plan, run);
  const TuneResult r = tuner.run();
  EXPECT_EQ(run.ran.size(), 1u);
  EXPECT_TRUE(r.aborted);
  EXPECT_FALSE(r.best);
  EXPECT_NE(r.stopped_because.find("failed with exit 2"), std::string::npos) << r.stopped_because;
}

TEST(Tuner, ThePickIsDeterministicAndPrefersTheSimplerWithinNoise) {
  FakePlanner plan;
  TuneSetup s = setup_for({0, 1, 2, 3});
  s.options.tuner_early_stopping = 100;
  s.repeats = 3;
  auto rate = [](const TrialSpec& t) {  // stage 3 is 3% faster than stage 1; stage 0 far behind
    return double(t.micro_batch) * (t.cell.stage == 3 ? 1030 : t.cell.stage == 0 ? 500 : 1000);
  };
  std::string first;
  for (int k = 0; k < 3; ++k) {
    FakeRunner run;
    run.rate = rate;
    Tuner tuner(s, plan, run);
    const TuneResult r = tuner.run();
    ASSERT_TRUE(r.best);
    const std::string pick = r.rows[*r.best].spec.name();
    if (k == 0) first = pick;
    EXPECT_EQ(pick, first);
    EXPECT_EQ(r.rows[*r.best].spec.cell.stage, 1);  // within 5% of stage 3: the lower stage wins
    EXPECT_EQ(r.rows[*r.best].runs.size(), 3u);     // picked by the median of its repeats
  }
}

TEST(Tuner, MedianOfRepeatsDecides) {
  FakePlanner plan;
  FakeRunner run;
  std::map<std::string, int> seen;
  // z0 mbs 64 measures fast once (a lucky first run) and slow twice; z2 mbs 64 is steady.
  run.rate = [&](const TrialSpec& t) {
    const int n = seen[t.name()]++;
    if (t.cell.stage == 0) return n == 0 ? 200000.0 : 50000.0;
    return 100000.0;
  };
  TuneSetup s = setup_for({0, 2});
  s.options.tuner_early_stopping = 100;
  s.repeats = 3;
  Tuner tuner(s, plan, run);
  const TuneResult r = tuner.run();
  ASSERT_TRUE(r.best);
  EXPECT_EQ(r.rows[*r.best].spec.cell.stage, 2);
}

TEST(Tuner, FullModeTriesTheBestStagesKnobs) {
  FakePlanner plan;
  FakeRunner run;
  run.rate = [](const TrialSpec& t) {
    double r = 1000.0 * double(t.micro_batch) * (t.cell.stage == 2 ? 2 : 1);
    if (t.knobs.overlap_comm && !*t.knobs.overlap_comm) r *= 1.2;  // this world prefers no overlap
    return r;
  };
  TuneSetup s = setup_for({0, 2});
  s.options.fast = false;
  s.options.tuner_early_stopping = 100;
  s.params = 100000000;  // 1e8: buckets 5e7 and 5e8 differ, 1e9 cuts as 5e8 does
  Tuner tuner(s, plan, run);
  const TuneResult r = tuner.run();
  ASSERT_TRUE(r.best);
  const TrialSpec& b = r.rows[*r.best].spec;
  EXPECT_EQ(b.cell.stage, 2);
  ASSERT_TRUE(b.knobs.overlap_comm);
  EXPECT_FALSE(*b.knobs.overlap_comm);
  // Stage 2's space: overlap {true,false} × reduce {5e7,5e8} × gather {5e7,5e8}.
  EXPECT_EQ(knob_space(2, 100000000).size(), 8u);
  EXPECT_EQ(knob_space(3, 100000000).size(), 4u);  // no gather bucket at stage 3
  EXPECT_EQ(knob_space(1, 1000).size(), 1u);       // a tiny model: one bucket size cuts them all
  EXPECT_TRUE(knob_space(0, 1000).empty());
}

TEST(BatchPolicy, CandidatesAndAccumulation) {
  BatchPolicy p;
  p.world_size = 2;
  EXPECT_EQ(p.candidates(100, 3), (std::vector<int64_t>{1, 32, 64, 100}));
  EXPECT_EQ(p.candidates(4, 3), (std::vector<int64_t>{1, 2, 4}));
  p.mode = BatchPolicy::Mode::KeepGlobal;
  p.global_batch = 48;  // 24 per rank
  EXPECT_FALSE(p.gas_for(5));
  EXPECT_EQ(*p.gas_for(6), 4);
  EXPECT_EQ(p.largest_micro(), 24);
  for (int64_t m : p.candidates(24, 3)) EXPECT_EQ(m * *p.gas_for(m) * 2, 48) << m;
  p.mode = BatchPolicy::Mode::MaxGlobal;
  p.global_batch = 64;
  EXPECT_EQ(*p.gas_for(8), 4);
  EXPECT_EQ(*p.gas_for(5), 6);
  EXPECT_FALSE(p.gas_for(64));
  p.mode = BatchPolicy::Mode::FixedGas;
  p.max_micro = int64_t(1) << 62;
  p.gas = int64_t(1) << 40;
  EXPECT_FALSE(p.gas_for(int64_t(1) << 30)) << "a global batch past 2^63 is not a batch";
  p.max_micro = 1024;
  p.gas = 2;
  p.min_global = 16;
  EXPECT_FALSE(p.gas_for(2));  // 2·2·2 = 8 < 16
  EXPECT_EQ(*p.gas_for(4), 2);
}

TEST(TrialConfig, SetsTheCellBatchAndKnobsAndDropsTheTuningBlock) {
  const nlohmann::json base = {{"autotuning", {{"enabled", true}}},
                               {"train_batch_size", "auto"},
                               {"zero_optimization", {{"stage", "all"}, {"offload_optimizer", {{"device", "cpu"}}}}}};
  TrialSpec t{TuneCell{2, OffloadDevice::None}, 8, 3, {}};
  t.knobs.overlap_comm = false;
  t.knobs.reduce_bucket_size = 50000000;
  const nlohmann::json c = trial_config(base, t, 4);
  EXPECT_FALSE(c.contains("autotuning"));
  EXPECT_EQ(c["train_batch_size"], 96);
  EXPECT_EQ(c["train_micro_batch_size_per_gpu"], 8);
  EXPECT_EQ(c["gradient_accumulation_steps"], 3);
  EXPECT_EQ(c["zero_optimization"]["stage"], 2);
  EXPECT_FALSE(c["zero_optimization"].contains("offload_optimizer"));
  EXPECT_EQ(c["zero_optimization"]["overlap_comm"], false);
  EXPECT_EQ(t.name(), "z2_gas3_tmbspg8_oc0_rbs5e7");
  t.cell.offload = OffloadDevice::CPU;
  EXPECT_EQ(trial_config(base, t, 4)["zero_optimization"]["offload_optimizer"]["device"], "cpu");
}

TEST(AutotuningOptions, DeepSpeedsKeysDefaultsAndRefusals) {
  Diagnostics d;
  AutotuningOptions o = read_autotuning_options(nullptr, "c.json", d);
  EXPECT_TRUE(o.fast);
  EXPECT_TRUE(o.overwrite);  // DeepSpeed's code default (its docs say false)
  EXPECT_EQ(o.tuner_type, TunerType::GridSearch);
  EXPECT_EQ(o.tuner_num_trials, 50);
  EXPECT_EQ(o.start_profile_step, 3);
  EXPECT_FALSE(d.has_errors());
  const nlohmann::json block = {{"enabled", true}, {"metric", "FLOPS"}, {"tuner_type", "model_based"},
                                {"mp_size", 2},    {"arg_mappings", {{"a", "b"}}}, {"max_train_micro_batch_size_per_gpu", 0},
                                {"fastt", true}};
  o = read_autotuning_options(block, "c.json", d);
  EXPECT_EQ(o.metric, TuneMetric::Flops);
  std::map<std::string, Severity> seen;
  for (const auto& x : d.all()) seen[x.path] = x.severity;
  EXPECT_EQ(seen.at("autotuning.mp_size"), Severity::Error);
  EXPECT_EQ(seen.at("autotuning.max_train_micro_batch_size_per_gpu"), Severity::Error);
  EXPECT_EQ(seen.at("autotuning.tuner_type"), Severity::Warning);
  EXPECT_EQ(seen.at("autotuning.arg_mappings"), Severity::Warning);
  EXPECT_EQ(seen.at("autotuning.fastt"), Severity::Warning);
  Diagnostics big;
  read_autotuning_options({{"num_tuning_micro_batch_sizes", 4294967295ull}, {"tuner_num_trials", 4294967296ull},
                           {"max_train_micro_batch_size_per_gpu", 9223372036854775807ll}},
                          "c.json", big);
  std::set<std::string> refused;
  for (const auto& x : big.all())
    if (x.severity == Severity::Error) refused.insert(x.path);
  EXPECT_EQ(refused, (std::set<std::string>{"autotuning.num_tuning_micro_batch_sizes", "autotuning.tuner_num_trials",
                                            "autotuning.max_train_micro_batch_size_per_gpu"}));
}

TEST(TrialCommand, TheWorldSizeIsPlacedOnce) {
  TrialLaunch l;
  l.zerotrain = "zt";
  l.world_size = 4;
  l.launcher = {"mpirun", "--oversubscribe"};
  EXPECT_EQ(shell_join(trial_command(l, "c.json")), "mpirun --oversubscribe -np 4 zt --config c.json");
  l.launcher = {"mpirun", "-np", "3"};  // the user's own count is kept
  EXPECT_EQ(shell_join(trial_command(l, "c.json")), "mpirun -np 3 zt --config c.json");
  l.launcher = {"srun", "-n", "{np}"};
  EXPECT_EQ(shell_join(trial_command(l, "c.json")), "srun -n 4 zt --config c.json");
  l.launcher = {"scripts/cluster.sh", "run", "-n", "2", "--"};  // places the ranks itself
  EXPECT_EQ(shell_join(trial_command(l, "c.json")), "scripts/cluster.sh run -n 2 -- zt --config c.json");
}

// The process runner: the status from the exit code (never the log's words), the timeout, reuse.
class ProcessRunner : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/zt_tune_XXXXXX";
    dir_ = ::mkdtemp(tmpl);
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }
  // A fake "zerotrain": a shell script that writes a metrics file (its --metrics argument) and exits.
  TrialLaunch launch(const std::string& body) {
    const std::string script = dir_ + "/fake.sh";
    std::ofstream f(script);
    f << "#!/bin/sh\n"
         "for a in \"$@\"; do if [ \"$prev\" = --metrics ]; then m=\"$a\"; fi; prev=\"$a\"; done\n"
      << body << "\n";
    f.close();
    ::chmod(script.c_str(), 0755);
    TrialLaunch l;
    l.launcher = {};
    l.zerotrain = script;
    l.exps_dir = dir_ + "/exps";
    l.start_profile_step = 2;
    l.timeout_s = 2;
    l.base_config = nlohmann::json::object();
    return l;
  }
  std::string dir_;
};

const char* kSteps =
    "echo '{\"event\":\"step\",\"step\":1,\"step_ms\":100,\"tokens_per_s\":10,\"comm_bytes\":{\"all_reduce\":5},"
    "\"comm_busy_s\":0.01,\"mem_peak\":7}' > \"$m\"\n"
    "echo '{\"event\":\"step\",\"step\":2,\"step_ms\":200,\"tokens_per_s\":1000,\"comm_bytes\":{\"all_reduce\":8},"
    "\"comm_busy_s\":0.02,\"mem_peak\":9}' >> \"$m\"\n"
    "echo '{\"event\":\"step\",\"step\":3,\"step_ms\":600,\"tokens_per_s\":2000,\"comm_bytes\":{\"all_reduce\":8},"
    "\"comm_busy_s\":0.02,\"mem_peak\":9}' >> \"$m\"\n";

TEST_F(ProcessRunner, OkReadsTheProfileWindow) {
  ProcessTrialRunner r(launch(std::string(kSteps) + "echo error: this word does not fail a trial >&2\nexit 0"));
  const TrialOutcome o = r.run(TrialSpec{TuneCell{1, OffloadDevice::None}, 2, 1, {}}, 0);
  EXPECT_EQ(o.status, TrialStatus::Ok) << o.detail;
  // Steps 2 and 3: (1000·0.2 + 2000·0.6) tokens over 0.8 s.
  EXPECT_DOUBLE_EQ(o.tokens_per_s, 1400.0 / 0.8);
  EXPECT_DOUBLE_EQ(o.step_ms, 400.0);
  EXPECT_DOUBLE_EQ(o.measured_peak_bytes, 9.0);
  EXPECT_DOUBLE_EQ(o.comm_bytes_per_step, 8.0);
}

TEST_F(ProcessRunner, ExitCodesDecide) {
  const TrialSpec t{TuneCell{1, OffloadDevice::None}, 2, 1, {}};
  {
    ProcessTrialRunner r(launch(std::string(kSteps) + "exit 4"));
    EXPECT_EQ(r.run(t, 0).status, TrialStatus::Oom);
  }
  {
    ProcessTrialRunner r(launch("kill -9 $$"));
    const TrialOutcome o = r.run(t, 0);
    EXPECT_EQ(o.status, TrialStatus::Oom);
    EXPECT_EQ(o.exit_code, 137);
  }
  {
    ProcessTrialRunner r(launch(std::string(kSteps) + "echo all fine >&2\nexit 1"));
    EXPECT_EQ(r.run(t, 0).status, TrialStatus::Error);
  }
  {
    ProcessTrialRunner r(launch("exit 0"));  // no metrics: an error, not a zero-rate success
    EXPECT_EQ(r.run(t, 0).status, TrialStatus::Error);
  }
}

TEST_F(ProcessRunner, TimeoutKillsTheGroupAndIsRecorded) {
  TrialLaunch l = launch("sleep 30 &\nsleep 30");
  l.timeout_s = 0.5;
  ProcessTrialRunner r(l);
  const auto t0 = std::chrono::steady_clock::now();
  const TrialOutcome o = r.run(TrialSpec{TuneCell{0, OffloadDevice::None}, 1, 1, {}}, 0);
  EXPECT_EQ(o.status, TrialStatus::Timeout);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
  std::ifstream res(dir_ + "/exps/z0_gas1_tmbspg1/result_0.json");
  EXPECT_TRUE(res.good());
}

TEST_F(ProcessRunner, ResultsAreReusedUnlessOverwrite) {
  const TrialSpec t{TuneCell{1, OffloadDevice::None}, 2, 1, {}};
  TrialLaunch l = launch(std::string(kSteps) + "exit 0");
  {
    ProcessTrialRunner r(l);
    EXPECT_FALSE(r.run(t, 0).reused);
  }
  l.overwrite = false;
  // A runner that would now fail: the kept result is read instead of running it.
  TrialLaunch broken = launch("exit 1");
  broken.overwrite = false;
  ProcessTrialRunner again(broken);
  const TrialOutcome o = again.run(t, 0);
  EXPECT_TRUE(o.reused);
  EXPECT_EQ(o.status, TrialStatus::Ok);
  // Another job (here, more steps) under the same trial name is run, not read back.
  TrialLaunch longer = broken;
  longer.steps = l.steps + 1;
  ProcessTrialRunner other(longer);
  const TrialOutcome o2 = other.run(t, 0);
  EXPECT_FALSE(o2.reused);
  EXPECT_EQ(o2.status, TrialStatus::Error);
  // A failure is never reused: it is run again.
  ProcessTrialRunner retry(longer);
  EXPECT_FALSE(retry.run(t, 0).reused);
  broken.overwrite = true;
  ProcessTrialRunner fresh(broken);
  EXPECT_EQ(fresh.run(t, 0).status, TrialStatus::Error);
}

TEST_F(ProcessRunner, BadInputAndAMissingLauncherStopTheSearch) {
  const TrialSpec t{TuneCell{1, OffloadDevice::None}, 2, 1, {}};
  {
    ProcessTrialRunner r(launch("echo 'error: train_batch_size = 3: not divisible' >&2\nexit 2"));
    const TrialOutcome o = r.run(t, 0);
    EXPECT_TRUE(o.stops_search);
    EXPECT_NE(o.detail.find("train_batch_size = 3"), std::string::npos) << o.detail;
  }
  TrialLaunch l = launch("exit 0");
  l.launcher = {"/nonexistent/launcher"};
  ProcessTrialRunner r(l);
  const TrialOutcome o = r.run(t, 0);
  EXPECT_EQ(o.exit_code, 127);
  EXPECT_TRUE(o.stops_search);
  EXPECT_NE(o.detail.find("cannot run /nonexistent/launcher"), std::string::npos) << o.detail;
}

TEST_F(ProcessRunner, AStopRequestEndsTheTrialAndThrows) {
  volatile std::sig_atomic_t stop = SIGINT;
  TrialLaunch l = launch("sleep 30");
  l.stop = &stop;
  l.timeout_s = 60;
  ProcessTrialRunner r(l);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(r.run(TrialSpec{TuneCell{0, OffloadDevice::None}, 1, 1, {}}, 0), TuneInterrupted);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
}

}  // namespace
}  // namespace zt
