// The run's length against the schedule's: --steps is the optimizer step the run trains to; an
// "auto" total_num_steps takes it (the HF rule); a number in the file is the schedule, of which the
// run trains the first --steps (more is an error naming both), or all of it without --steps.
#include <gtest/gtest.h>

#include "runtime/config/config_echo.h"
#include "tests/config/config_test_util.h"

namespace zt {
namespace {

std::string with_scheduler(const std::string& scheduler) {
  return R"({"train_micro_batch_size_per_gpu": 2, "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}})" +
         (scheduler.empty() ? std::string() : ", \"scheduler\": " + scheduler) + "}";
}

const std::string kWarmup = R"({"type": "WarmupLR", "params": {"warmup_max_lr": 1e-3, "warmup_num_steps": 5}})";
const std::string kDecay1000 =
    R"({"type": "WarmupDecayLR", "params": {"warmup_max_lr": 1e-3, "warmup_num_steps": 5, "total_num_steps": 1000}})";
const std::string kCosineAuto =
    R"({"type": "WarmupCosineLR", "params": {"warmup_num_steps": 5, "total_num_steps": "auto"}})";

LoadOptions steps(std::optional<int64_t> n) {
  LoadOptions o;
  o.flags.steps = n;
  return o;
}

TEST(RunLength, WithoutAScheduleLengthTheDefault) {
  const auto r = test::load(with_scheduler(kWarmup), steps(std::nullopt));
  ASSERT_TRUE(r.valid()) << test::dump(r);
  EXPECT_EQ(r.config.run_steps.value, kDefaultRunSteps);
  EXPECT_EQ(r.config.schedule_steps(), std::nullopt);
  EXPECT_EQ(describe_run_length(r.config),
            "200 steps (the default: --steps not given); WarmupLR has no end (it holds its peak after warmup)");
}

TEST(RunLength, StepsFlagWithoutAScheduleLength) {
  const auto r = test::load(with_scheduler(kWarmup), steps(20));
  ASSERT_TRUE(r.valid()) << test::dump(r);
  EXPECT_EQ(r.config.run_steps.value, 20);
  EXPECT_EQ(r.config.run_steps.source.kind, SourceKind::Flag);
}

TEST(RunLength, FewerStepsThanAConcreteScheduleTrainItsStart) {
  const auto r = test::load(with_scheduler(kDecay1000), steps(20));
  ASSERT_TRUE(r.valid()) << test::dump(r);  // no "set twice": the schedule and the run are two things
  EXPECT_EQ(r.config.run_steps.value, 20);
  EXPECT_EQ(r.config.scheduler.total_num_steps.value, 1000);
  EXPECT_EQ(describe_run_length(r.config),
            "20 steps (flag --steps) of a 1000-step schedule (scheduler.params.total_num_steps: file); --load continues it");
}

TEST(RunLength, MoreStepsThanAConcreteScheduleIsAnError) {
  const auto r = test::load(with_scheduler(kDecay1000), steps(2000));
  const Diagnostic* d = test::find(r, "--steps", "past the end of the schedule");
  ASSERT_NE(d, nullptr) << test::dump(r);
  EXPECT_EQ(d->value, "2000");
  EXPECT_NE(d->message.find("total_num_steps is 1000"), std::string::npos) << d->message;
  EXPECT_NE(d->fix.find("--steps 1000 or less"), std::string::npos) << d->fix;
  EXPECT_EQ(r.diagnostics.error_count(), 1u) << test::dump(r);
}

TEST(RunLength, StepsEqualToTheScheduleIsTheWholeSchedule) {
  const auto r = test::load(with_scheduler(kDecay1000), steps(1000));
  ASSERT_TRUE(r.valid()) << test::dump(r);
  EXPECT_NE(describe_run_length(r.config).find("the whole 1000-step schedule"), std::string::npos);
}

TEST(RunLength, NoStepsFlagTrainsTheWholeConcreteSchedule) {
  const auto r = test::load(with_scheduler(kDecay1000), steps(std::nullopt));
  ASSERT_TRUE(r.valid()) << test::dump(r);
  EXPECT_EQ(r.config.run_steps.value, 1000);
  EXPECT_EQ(r.config.run_steps.source.kind, SourceKind::Derived);
  EXPECT_NE(describe_run_length(r.config).find("1000 steps (derived: the whole schedule"), std::string::npos)
      << describe_run_length(r.config);
}

TEST(RunLength, AutoTotalTakesTheSteps) {
  const auto r = test::load(with_scheduler(kCosineAuto), steps(30));
  ASSERT_TRUE(r.valid()) << test::dump(r);
  EXPECT_EQ(r.config.scheduler.total_num_steps.value, 30);
  EXPECT_EQ(r.config.scheduler.total_num_steps.source.describe(), "auto <- --steps");
  EXPECT_EQ(r.config.run_steps.value, 30);
  EXPECT_NE(describe_run_length(r.config).find("the whole 30-step schedule"), std::string::npos);
}

TEST(RunLength, AutoTotalWithoutStepsIsTheDefaultRun) {
  const auto r = test::load(with_scheduler(kCosineAuto), steps(std::nullopt));
  ASSERT_TRUE(r.valid()) << test::dump(r);
  EXPECT_EQ(r.config.scheduler.total_num_steps.value, kDefaultRunSteps);
  EXPECT_EQ(r.config.run_steps.value, kDefaultRunSteps);
}

TEST(RunLength, NoSchedulerIsAConstantLearningRate) {
  const auto r = test::load(with_scheduler(""), steps(7));
  ASSERT_TRUE(r.valid()) << test::dump(r);
  EXPECT_EQ(describe_run_length(r.config), "7 steps (flag --steps); no scheduler: constant learning rate");
}

TEST(RunLength, ZeroStepsIsAnError) {
  const auto r = test::load(with_scheduler(kWarmup), steps(0));
  EXPECT_NE(test::find(r, "--steps", "must be at least 1"), nullptr) << test::dump(r);
}

// The echo of `zerotrain check` states it too.
TEST(RunLength, EchoStatesTheRunLength) {
  const auto r = test::load(with_scheduler(kDecay1000), steps(20));
  EXPECT_NE(config_to_text(r.config).find("  run length = 20 steps (flag --steps) of a 1000-step schedule"),
            std::string::npos);
}

}  // namespace
}  // namespace zt
