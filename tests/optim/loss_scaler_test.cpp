// The fp16 loss scaler's transitions against hand-written sequences: growth after the window,
// hysteresis (plain and consecutive), halving, the min_loss_scale floor, the stop at the minimum,
// static scaling, checkpoint state and config errors.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "optim/loss_scaler.h"

namespace zt {
namespace {

using E = LossScaleEvent;

struct Expect {
  bool overflow;
  E event;
  double scale_after;
};

void run(LossScaler& s, const std::vector<Expect>& seq) {
  for (size_t k = 0; k < seq.size(); ++k) {
    const E ev = s.update(seq[k].overflow);
    EXPECT_EQ(loss_scale_event_name(ev), std::string(loss_scale_event_name(seq[k].event))) << "update " << k;
    EXPECT_EQ(s.scale(), seq[k].scale_after) << "update " << k;
  }
}

// The expected sequences below are DeepSpeed v0.19.5's: DynamicLossScaler.update_scale
// (runtime/fp16/loss_scaler.py, used by the ZeRO optimizers) and FP16_Optimizer._update_scale
// (runtime/fp16/fused_optimizer.py, stage 0), evaluated by hand-transcribing their arithmetic:
// growth when stable = it - last_overflow - 1 is > 0 and a multiple of the window.

TEST(LossScaler, GrowthHysteresisHalvingAndStopAtMinimum) {
  LossScalerConfig c;
  c.initial_scale_power = 4;  // 16
  c.loss_scale_window = 3;
  c.hysteresis = 2;
  c.min_loss_scale = 2;
  LossScaler s(c);
  EXPECT_TRUE(s.dynamic());
  EXPECT_EQ(s.scale(), 16.0);
  run(s, {
             {false, E::Applied, 16},            // it 0: stable 0
             {false, E::Applied, 16},            // it 1
             {false, E::Applied, 16},            // it 2: stable 2 (the window-th clean step: no growth since 0.17.1)
             {false, E::AppliedAndGrew, 32},     // it 3: stable 3, the (window+1)-th clean step
             {true, E::SkippedHysteresis, 32},   // it 4: budget 2 -> 1
             {true, E::SkippedLowered, 16},      // it 5: budget exhausted -> halve
             {false, E::Applied, 16},            // it 6: budget NOT refilled (not consecutive)
             {true, E::SkippedLowered, 8},       // it 7: halves at once
             {false, E::Applied, 8},             // it 8
             {false, E::Applied, 8},             // it 9
             {false, E::Applied, 8},             // it 10
             {false, E::AppliedAndGrew, 16},     // it 11: stable 3 since it 7; budget refilled to 2
             {true, E::SkippedHysteresis, 16},   // it 12
             {true, E::SkippedLowered, 8},       // it 13
             {true, E::SkippedLowered, 4},       // it 14
             {true, E::SkippedLowered, 2},       // it 15: reaches min_loss_scale
         });
  EXPECT_FALSE(s.failed());
  EXPECT_EQ(s.update(true), E::OverflowAtMinimum);  // it 16: DeepSpeed raises "already at minimum"
  EXPECT_EQ(s.scale(), 2.0);
  EXPECT_TRUE(s.failed());
  const std::string msg = s.failure_message();
  EXPECT_NE(msg.find("min_loss_scale=2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("use bf16, lower the lr, or raise min_loss_scale"), std::string::npos) << msg;
  EXPECT_TRUE(is_skip(E::OverflowAtMinimum));
  EXPECT_FALSE(is_skip(E::AppliedAndGrew));
}

TEST(LossScaler, DeepSpeedDefaultsGrowOnThe1001stCleanStep) {
  LossScaler s(LossScalerConfig{});  // 2^16, window 1000 (DeepSpeed's fp16 defaults)
  std::vector<int> grew;
  for (int it = 0; it < 2001; ++it)
    if (s.update(false) == E::AppliedAndGrew) grew.push_back(it);
  EXPECT_EQ(grew, (std::vector<int>{1000, 2000}));
  EXPECT_EQ(s.scale(), 262144.0);
}

TEST(LossScaler, ConsecutiveHysteresisRefillsOnEveryGoodStep) {
  LossScalerConfig c;
  c.initial_scale_power = 10;
  c.loss_scale_window = 100;
  c.hysteresis = 2;
  c.consecutive_hysteresis = true;
  LossScaler s(c);
  run(s, {
             {true, E::SkippedHysteresis, 1024},
             {false, E::Applied, 1024},  // budget back to 2
             {true, E::SkippedHysteresis, 1024},
             {true, E::SkippedLowered, 512},
         });
  c.consecutive_hysteresis = false;
  LossScaler t(c);
  run(t, {
             {true, E::SkippedHysteresis, 1024},
             {false, E::Applied, 1024},  // budget stays at 1
             {true, E::SkippedLowered, 512},
         });
}

TEST(LossScaler, HysteresisOneHalvesImmediatelyAndFloorIsNotAPowerOfTwo) {
  LossScalerConfig c;
  c.initial_scale_power = 1;  // 2
  c.hysteresis = 1;
  c.min_loss_scale = 1.5;
  LossScaler s(c);
  run(s, {{true, E::SkippedLowered, 1.5}});  // max(2 / 2, 1.5)
  EXPECT_EQ(s.update(true), E::OverflowAtMinimum);
  EXPECT_NE(s.failure_message().find("min_loss_scale=1.5"), std::string::npos);
}

TEST(LossScaler, GrowthWindowCountsFromTheLastOverflow) {
  LossScalerConfig c;
  c.initial_scale_power = 0;
  c.loss_scale_window = 2;
  c.hysteresis = 1;
  c.min_loss_scale = 0.25;
  LossScaler s(c);
  run(s, {
             {false, E::Applied, 1},         // it 0
             {false, E::Applied, 1},         // it 1
             {false, E::AppliedAndGrew, 2},  // it 2: stable 2
             {true, E::SkippedLowered, 1},   // it 3
             {false, E::Applied, 1},         // it 4: stable 0
             {false, E::Applied, 1},         // it 5: stable 1
             {false, E::AppliedAndGrew, 2},  // it 6: stable 2
             {false, E::Applied, 2},         // it 7: stable 3
             {false, E::AppliedAndGrew, 4},  // it 8: stable 4
             {false, E::Applied, 4},
             {false, E::AppliedAndGrew, 8},  // it 10: stable 6
         });
}

// Stage 0 (DeepSpeed's FP16_Optimizer): no hysteresis, and an overflow at the floor keeps the floor
// and skips the step instead of stopping the run.
TEST(LossScaler, Fp16OptimizerHasNoHysteresisAndNoStop) {
  LossScalerConfig c;
  c.initial_scale_power = 4;  // 16
  c.loss_scale_window = 3;
  c.hysteresis = 2;  // ignored by this scaler, as in DeepSpeed
  c.min_loss_scale = 2;
  c.kind = LossScalerKind::Fp16Optimizer;
  LossScaler s(c);
  run(s, {
             {false, E::Applied, 16},
             {false, E::Applied, 16},
             {false, E::Applied, 16},
             {false, E::AppliedAndGrew, 32},  // it 3
             {true, E::SkippedLowered, 16},   // no hysteresis: halves at the first overflow
             {true, E::SkippedLowered, 8},
             {true, E::SkippedLowered, 4},
             {true, E::SkippedLowered, 2},
             {true, E::SkippedLowered, 2},    // at the floor: skipped, the scale stays
             {true, E::SkippedLowered, 2},
             {false, E::Applied, 2},
             {false, E::Applied, 2},
             {false, E::Applied, 2},
         });
  EXPECT_FALSE(s.failed());
  EXPECT_EQ(s.failure_message(), "");
}

TEST(LossScaler, StaticScaleSkipsOverflowsAndNeverMoves) {
  LossScalerConfig c;
  c.loss_scale = 128;
  LossScaler s(c);
  EXPECT_FALSE(s.dynamic());
  run(s, {{false, E::Applied, 128}, {true, E::SkippedStatic, 128}, {true, E::SkippedStatic, 128}});
  EXPECT_FALSE(s.failed());
  for (int i = 0; i < 2000; ++i) s.update(false);
  EXPECT_EQ(s.scale(), 128.0);
}

TEST(LossScaler, StateRoundTripContinuesTheSameSequence) {
  LossScalerConfig c;
  c.initial_scale_power = 5;
  c.loss_scale_window = 3;
  c.hysteresis = 2;
  LossScaler a(c);
  a.update(true);
  a.update(false);
  LossScaler b(c);
  b.restore(a.state());
  for (bool ov : {false, false, true, true, false, false, false}) {
    EXPECT_EQ(a.update(ov), b.update(ov));
    EXPECT_EQ(a.scale(), b.scale());
  }
}

TEST(LossScaler, InvalidConfigNamesTheKey) {
  auto error_of = [](LossScalerConfig c) -> std::string {
    try {
      LossScaler s(c);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  LossScalerConfig c;
  c.loss_scale_window = 0;
  EXPECT_NE(error_of(c).find("fp16.loss_scale_window"), std::string::npos);
  c = {};
  c.hysteresis = 0;
  EXPECT_NE(error_of(c).find("fp16.hysteresis"), std::string::npos);
  c = {};
  c.min_loss_scale = 0;
  EXPECT_NE(error_of(c).find("fp16.min_loss_scale"), std::string::npos);
  c = {};
  c.loss_scale = -1;
  EXPECT_NE(error_of(c).find("fp16.loss_scale"), std::string::npos);
  c = {};
  c.initial_scale_power = 2000;
  EXPECT_NE(error_of(c).find("fp16.initial_scale_power"), std::string::npos);
  c.initial_scale_power = 127;  // 2^127 is a finite fp32 number (configs/README.md's range)
  EXPECT_EQ(error_of(c), "");
  EXPECT_EQ(error_of(LossScalerConfig{}), "");
  EXPECT_EQ(LossScaler(LossScalerConfig{}).scale(), 65536.0);
}

}  // namespace
}  // namespace zt
