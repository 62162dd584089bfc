// LR schedulers against hand-computed sequences (numbers worked out from DeepSpeed's formulas with a
// calculator), the first-step convention, and the factory's errors.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "optim/lr_scheduler.h"

namespace zt {
namespace {

void expect_seq(const LrScheduler& s, int64_t first_it, const std::vector<double>& want) {
  for (size_t k = 0; k < want.size(); ++k) {
    const int64_t it = first_it + static_cast<int64_t>(k);
    EXPECT_NEAR(s.lr(it), want[k], 1e-12 * (1.0 + std::abs(want[k]))) << s.name() << " it=" << it;
  }
}

SchedulerParams params(std::map<std::string, double> n, std::map<std::string, std::string> s = {}) {
  return SchedulerParams{std::move(n), std::move(s)};
}

std::string error_of(const std::string& type, const SchedulerParams& p) {
  try {
    make_lr_scheduler(type, p, 0.1);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(WarmupLR, LogWarmupThenHold) {
  // W = 4: gamma = ln(it+1)/ln 4 = 0, 0.5, 0.792481250360578, 1; lr = 0.001 + 0.009 * gamma.
  auto s = make_lr_scheduler("WarmupLR", params({{"warmup_min_lr", 0.001}, {"warmup_max_lr", 0.01}, {"warmup_num_steps", 4}}), 0.5);
  expect_seq(*s, -1, {0.001, 0.001, 0.0055, 0.0081323312532452, 0.01, 0.01, 0.01});
}

TEST(WarmupLR, LinearWarmupAndDefaultMaxIsOptimizerLr) {
  auto s = make_lr_scheduler("WarmupLR", params({{"warmup_num_steps", 4}}, {{"warmup_type", "linear"}}), 2.0);
  expect_seq(*s, -1, {0.0, 0.0, 0.5, 1.0, 1.5, 2.0, 2.0});
}

TEST(WarmupLR, WarmupStepsClampedToTwo) {
  auto s = make_lr_scheduler("WarmupLR", params({{"warmup_max_lr", 1.0}, {"warmup_num_steps", 1}}, {{"warmup_type", "linear"}}), 0.1);
  expect_seq(*s, 0, {0.0, 0.5, 1.0, 1.0});
}

TEST(WarmupLR, FirstOptimizerStepUsesConstructionValue) {
  auto s = make_lr_scheduler("WarmupLR", params({{"warmup_min_lr", 0.25}, {"warmup_max_lr", 1.0}, {"warmup_num_steps", 4}}, {{"warmup_type", "linear"}}), 0.1);
  EXPECT_DOUBLE_EQ(s->lr_for_step(0), 0.25);    // 1st applied step: lr(-1) = warmup_min_lr
  EXPECT_DOUBLE_EQ(s->lr_for_step(1), 0.25);    // 2nd: lr(0), gamma 0
  EXPECT_DOUBLE_EQ(s->lr_for_step(2), 0.4375);  // 3rd: lr(1) = 0.25 + 0.75 * 0.25
}

TEST(WarmupDecayLR, LinearWarmupThenLinearDecayToZero) {
  // T = 10, W = 4: after warmup gamma = (10 - it) / 6, floored at 0.
  auto s = make_lr_scheduler("WarmupDecayLR",
                             params({{"total_num_steps", 10}, {"warmup_max_lr", 1.0}, {"warmup_num_steps", 4}},
                                    {{"warmup_type", "linear"}}),
                             0.1);
  expect_seq(*s, -1, {0.0, 0.0, 0.25, 0.5, 0.75, 1.0, 5.0 / 6.0, 4.0 / 6.0, 0.5, 2.0 / 6.0, 1.0 / 6.0, 0.0, 0.0, 0.0});
}

TEST(WarmupDecayLR, DefaultsMaxLrOneThousandthAndLogWarmup) {
  auto s = make_lr_scheduler("WarmupDecayLR", params({{"total_num_steps", 8}, {"warmup_num_steps", 4}}), 0.5);
  expect_seq(*s, 0, {0.0, 0.0005, 0.000792481250360578, 0.001, 0.001, 0.00075});
}

TEST(WarmupCosineLR, RatiosOfOptimizerLrWithCosineDecay) {
  // base 0.1, T = 10, W = 4, warmup_min_ratio 0.1, cos_min_ratio 0.01, linear warmup.
  // warmup ratio = 0.1 + 0.9 * it/4; after: s = it - 3, ratio = 0.01 + 0.99 * (1 + cos(pi s / 6)) / 2.
  auto s = make_lr_scheduler("WarmupCosineLR",
                             params({{"total_num_steps", 10}, {"warmup_num_steps", 4}, {"warmup_min_ratio", 0.1},
                                     {"cos_min_ratio", 0.01}},
                                    {{"warmup_type", "linear"}}),
                             0.1);
  expect_seq(*s, -1,
             {0.0, 0.01, 0.0325, 0.055, 0.0775, 0.09336825748732973, 0.07525, 0.0505, 0.02575,
              0.007631742512670284, 0.001});
}

TEST(WarmupCosineLR, LogWarmup) {
  auto s = make_lr_scheduler("WarmupCosineLR", params({{"total_num_steps", 10}, {"warmup_num_steps", 4}}), 1.0);
  EXPECT_NEAR(s->lr(1), 0.5, 1e-15);  // ratio = 0 + ln 2 / ln 4
}

// The sequences below are DeepSpeed v0.19.5's (runtime/lr_schedules.py), evaluated by transcribing
// its arithmetic: lr after step() with last_batch_iteration = it.

// Since 0.19 the cosine progress is clamped at 1: after total_num_steps the lr stays at
// cos_min_ratio instead of turning back up.
TEST(WarmupCosineLR, FloorAfterTotalNumSteps) {
  auto s = make_lr_scheduler("WarmupCosineLR",
                             params({{"total_num_steps", 10}, {"warmup_num_steps", 4}, {"warmup_min_ratio", 0.1},
                                     {"cos_min_ratio", 0.01}},
                                    {{"warmup_type", "linear"}}),
                             0.1);
  expect_seq(*s, 9, {0.001, 0.001, 0.001, 0.001, 0.001, 0.001, 0.001});  // it 9 .. 15
  EXPECT_NEAR(s->lr(1000), 0.001, 1e-15);
}

// total_num_steps <= warmup_num_steps runs in DeepSpeed: warmup, then the floor at once.
TEST(WarmupCosineLR, TotalNotAboveWarmupRuns) {
  auto s = make_lr_scheduler("WarmupCosineLR",
                             params({{"total_num_steps", 3}, {"warmup_num_steps", 4}, {"cos_min_ratio", 0.05}},
                                    {{"warmup_type", "linear"}}),
                             1.0);
  expect_seq(*s, -1, {0.0, 0.0, 0.25, 0.5, 0.75, 0.05, 0.05, 0.05, 0.05});
  auto one = make_lr_scheduler("WarmupCosineLR", params({{"total_num_steps", 1}, {"warmup_num_steps", 1}},
                                                         {{"warmup_type", "linear"}}),
                               1.0);
  expect_seq(*one, -1, {0.0, 0.0, 0.5, 0.0001, 0.0001, 0.0001});  // warmup clamped to 2 steps
}

// warmup_num_steps <= 0 raises ValueError in DeepSpeed (WarmupLR, WarmupDecayLR, WarmupCosineLR).
TEST(LrSchedulerFactory, WarmupMustBePositive) {
  for (const char* type : {"WarmupLR", "WarmupDecayLR", "WarmupCosineLR"}) {
    SchedulerParams p = params({{"warmup_num_steps", 0}, {"total_num_steps", 10}});
    if (std::string(type) == "WarmupLR") p.numbers.erase("total_num_steps");
    EXPECT_NE(error_of(type, p).find("positive integer"), std::string::npos) << type;
  }
}

// last_batch_iteration L (a resumed schedule): the first step keeps the optimizer's lr (DeepSpeed
// does not set the lr at construction when L != -1), and the schedule continues from L.
TEST(LrSchedulerFactory, LastBatchIterationResumes) {
  auto fresh = make_lr_scheduler("WarmupDecayLR", params({{"total_num_steps", 10}, {"warmup_max_lr", 1.0},
                                                           {"warmup_num_steps", 4}}, {{"warmup_type", "linear"}}),
                                 0.3);
  auto resumed = make_lr_scheduler("WarmupDecayLR", params({{"total_num_steps", 10}, {"warmup_max_lr", 1.0},
                                                             {"warmup_num_steps", 4}, {"last_batch_iteration", 5}},
                                                            {{"warmup_type", "linear"}}),
                                   0.3);
  EXPECT_DOUBLE_EQ(resumed->lr_for_step(0), 0.3);
  for (int k = 1; k < 8; ++k) EXPECT_DOUBLE_EQ(resumed->lr_for_step(k), fresh->lr(5 + k)) << k;
  EXPECT_DOUBLE_EQ(resumed->lr_for_step(1), 4.0 / 6.0);  // lr(6) = (10 - 6) / (10 - 4)
}

// Stair counts (DeepSpeed 0.19.4): the cycle holds each of n equal stairs per half.
TEST(OneCycle, StairCounts) {
  auto s = make_lr_scheduler("OneCycle", params({{"cycle_min_lr", 0.0}, {"cycle_max_lr", 1.0}, {"cycle_first_step_size", 4},
                                                 {"cycle_second_step_size", 4}, {"cycle_first_stair_count", 2}}),
                             0.1);
  expect_seq(*s, -1, {0.0, 0.0, 0.5, 0.5, 1.0, 0.5, 0.5, 0.0, 0.0, 0.0, 0.0});
  const std::vector<double> mom = {0.8, 0.9, 0.85, 0.85, 0.8, 0.85, 0.85, 0.9, 0.9, 0.9, 0.9};
  for (size_t k = 0; k < mom.size(); ++k) EXPECT_NEAR(*s->beta1(int64_t(k) - 1), mom[k], 1e-12) << k;
  auto asym = make_lr_scheduler("OneCycle", params({{"cycle_min_lr", 0.01}, {"cycle_max_lr", 0.1}, {"cycle_first_step_size", 3},
                                                    {"cycle_second_step_size", 6}, {"cycle_first_stair_count", 3},
                                                    {"cycle_second_stair_count", 2}}),
                                0.1);
  expect_seq(*asym, -1, {0.01, 0.04, 0.07, 0.1, 0.055, 0.055, 0.055, 0.01, 0.01, 0.01, 0.01});
}

// cycle_second_step_size 0 is valid in DeepSpeed (>= 0): the cycle only rises.
TEST(OneCycle, SecondStepSizeZero) {
  auto s = make_lr_scheduler("OneCycle", params({{"cycle_min_lr", 0.0}, {"cycle_max_lr", 1.0}, {"cycle_first_step_size", 4},
                                                 {"cycle_second_step_size", 0}, {"cycle_momentum", 0}}),
                             0.1);
  expect_seq(*s, -1, {0.0, 0.25, 0.5, 0.75, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0});
  EXPECT_NE(error_of("OneCycle", params({{"cycle_min_lr", 0.0}, {"cycle_max_lr", 1.0}, {"cycle_second_step_size", -1}}))
                .find("cycle_second_step_size"),
            std::string::npos);
}

TEST(OneCycle, CycleThenDecayWithMomentum) {
  // C = 4 + 6, r = 0.4; scale = x / 0.4 rising, (x - 1) / (0.4 - 1) falling, x = frac((it + 1) / 10).
  auto s = make_lr_scheduler("OneCycle",
                             params({{"cycle_min_lr", 0.01}, {"cycle_max_lr", 0.1}, {"cycle_first_step_size", 4},
                                     {"cycle_second_step_size", 6}, {"decay_step_size", 2}, {"decay_lr_rate", 0.5},
                                     {"cycle_min_mom", 0.8}, {"cycle_max_mom", 0.9}, {"decay_mom_rate", 0.1}}),
                             0.1);
  expect_seq(*s, -1,
             {0.01, 0.0325, 0.055, 0.0775, 0.1, 0.085, 0.07, 0.055, 0.04, 0.025, 0.01, 0.008, 0.01 / 1.5, 0.01 / 1.75,
              0.005});
  const std::vector<double> mom = {0.8,   0.875, 0.85,  0.825, 0.8,   0.9 - 0.1 / 1.2, 0.9 - 0.1 * 4.0 / 6.0,
                                   0.85,  0.9 - 0.1 / 3.0, 0.9 - 0.1 / 6.0, 0.9, 0.945, 0.99, 1.035, 1.08};
  for (size_t k = 0; k < mom.size(); ++k) {
    const int64_t it = static_cast<int64_t>(k) - 1;
    ASSERT_TRUE(s->beta1(it).has_value());
    EXPECT_NEAR(*s->beta1(it), mom[k], 1e-12) << "it=" << it;
    EXPECT_EQ(*s->beta2(it), 0.99);
  }
}

TEST(OneCycle, NoDecayHoldsMinLrAndMaxMomentum) {
  auto s = make_lr_scheduler("OneCycle", params({{"cycle_min_lr", 0.01}, {"cycle_max_lr", 0.1}, {"cycle_first_step_size", 2},
                                                 {"decay_lr_rate", 0.5}}),
                             0.1);
  // second step size defaults to the first: C = 4, r = 0.5.
  expect_seq(*s, -1, {0.01, 0.055, 0.1, 0.055, 0.01, 0.01, 0.01});
  EXPECT_NEAR(*s->beta1(5), 0.9, 1e-15);
  auto off = make_lr_scheduler("OneCycle", params({{"cycle_min_lr", 0.01}, {"cycle_max_lr", 0.1}, {"cycle_momentum", 0}}), 0.1);
  EXPECT_FALSE(off->beta1(3).has_value());
  EXPECT_FALSE(off->beta2(3).has_value());
}

TEST(ConstantLr, SameEverywhere) {
  auto s = make_constant_lr(3e-4);
  expect_seq(*s, -1, {3e-4, 3e-4, 3e-4});
  EXPECT_FALSE(s->beta1(0).has_value());
}

TEST(LrSchedulerFactory, ErrorsNameTheParam) {
  EXPECT_NE(error_of("WarmupDecayLR", params({{"warmup_num_steps", 4}})).find("total_num_steps"), std::string::npos);
  EXPECT_NE(error_of("WarmupCosineLR", params({})).find("total_num_steps"), std::string::npos);
  EXPECT_NE(error_of("OneCycle", params({{"cycle_max_lr", 0.1}})).find("cycle_min_lr"), std::string::npos);
  EXPECT_NE(error_of("OneCycle", params({{"cycle_min_lr", 0.1}})).find("cycle_max_lr"), std::string::npos);
  EXPECT_NE(error_of("WarmupLR", params({{"warmup_num_step", 4}})).find("warmup_num_step"), std::string::npos);
  EXPECT_NE(error_of("WarmupLR", params({}, {{"warmup_type", "cosine"}})).find("warmup_type"), std::string::npos);
  EXPECT_NE(error_of("WarmupLR", params({{"warmup_num_steps", 2.5}})).find("warmup_num_steps"), std::string::npos);
  EXPECT_NE(error_of("WarmupLR", params({{"warmup_num_steps", -3}})).find("warmup_num_steps"), std::string::npos);
  EXPECT_NE(error_of("OneCycle", params({{"cycle_min_lr", 0.1}, {"cycle_max_lr", 1}, {"cycle_momentum", 2}})).find("cycle_momentum"),
            std::string::npos);
  EXPECT_NE(error_of("LRRangeTest", params({})).find("WarmupCosineLR"), std::string::npos);  // lists the supported
  EXPECT_EQ(error_of("WarmupLR", params({})), "");
  EXPECT_EQ(error_of("WarmupLR", params({{"last_batch_iteration", 5}})), "");
  EXPECT_NE(error_of("WarmupLR", params({{"last_batch_iteration", -7}})).find("last_batch_iteration"), std::string::npos);
}

}  // namespace
}  // namespace zt
