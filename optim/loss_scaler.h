// LossScaler: fp16 loss scaling with DeepSpeed's (v0.19.5) semantics — a static scale, or the dynamic
// scaler (initial_scale_power, loss_scale_window, hysteresis, consecutive_hysteresis, min_loss_scale).
#pragma once

#include <cstdint>
#include <string>

namespace zt {

// DeepSpeed has two dynamic scalers: its ZeRO optimizers (stages 1-3) use DynamicLossScaler, with
// hysteresis and an error when an overflow happens at the floor; the stage-0 FP16_Optimizer has its
// own, with neither (an overflow at the floor keeps the floor and skips the step).
enum class LossScalerKind { ZeroOptimizer, Fp16Optimizer };

// The `fp16` block's scaling keys, DeepSpeed's names and defaults.
struct LossScalerConfig {
  double loss_scale = 0.0;          // > 0: static scale; 0: dynamic
  int initial_scale_power = 16;     // dynamic: start at 2^initial_scale_power
  int64_t loss_scale_window = 1000; // dynamic: good steps since the last overflow before the scale doubles
  int hysteresis = 2;               // dynamic: overflows absorbed before the scale is halved
  bool consecutive_hysteresis = false;  // dynamic: refill the hysteresis budget on every good step
  double min_loss_scale = 1.0;      // dynamic: the scale never goes below this
  LossScalerKind kind = LossScalerKind::ZeroOptimizer;
};

// What update() did with the step that was just checked.
enum class LossScaleEvent {
  Applied,             // no overflow: the step is applied, the scale is unchanged
  AppliedAndGrew,      // no overflow: applied; the window completed so the scale doubled for the next step
  SkippedHysteresis,   // overflow: step skipped, scale kept, hysteresis budget decremented
  SkippedLowered,      // overflow: step skipped, scale halved (not below min_loss_scale)
  SkippedStatic,       // overflow under a static scale: step skipped, scale kept
  OverflowAtMinimum,   // overflow with the scale already at min_loss_scale and no hysteresis left:
                       // training cannot continue; failed() is now true (the engine stops with
                       // failure_message())
};
bool is_skip(LossScaleEvent e);  // true for every overflow event
const char* loss_scale_event_name(LossScaleEvent e);

// Transitions (DeepSpeed 0.19.5's DynamicLossScaler.update_scale), with `it` counting update() calls:
//   overflow:  if hysteresis == 1 or cur_hysteresis == 1:
//                 scale == min_loss_scale -> OverflowAtMinimum (scale unchanged, failed() set)
//                 else scale = max(scale / 2, min_loss_scale)          -> SkippedLowered
//              else cur_hysteresis -= 1                                -> SkippedHysteresis
//              last_overflow = it
//   good:      if consecutive_hysteresis: cur_hysteresis = hysteresis
//              stable = it - last_overflow - 1
//              if stable > 0 and stable % loss_scale_window == 0:
//                 scale *= 2 (no upper bound, as DeepSpeed);
//                 if !consecutive_hysteresis: cur_hysteresis = hysteresis  -> AppliedAndGrew
//   it += 1.  last_overflow starts at -1, so with no overflow the first growth happens on the
//   (loss_scale_window + 1)-th good step (DeepSpeed since 0.17.1), then every loss_scale_window good
//   steps; after an overflow, again first on the (loss_scale_window + 1)-th good step after it.
//   Without consecutive_hysteresis the budget only refills on growth.
// Fp16Optimizer (stage 0): no hysteresis: every overflow sets scale = max(scale / 2, min_loss_scale)
//   (SkippedLowered, also when the scale is already at the floor; never failed()); growth as above.
class LossScaler {
 public:
  explicit LossScaler(const LossScalerConfig& cfg);  // throws std::invalid_argument naming the fp16 key

  bool dynamic() const { return dynamic_; }
  double scale() const { return scale_; }             // multiply the loss by this before backward
  LossScaleEvent update(bool overflow);               // call once per optimizer step, all ranks alike
  bool failed() const { return failed_; }
  std::string failure_message() const;                // "" until failed()

  // Checkpointed state.
  struct State {
    double scale = 1.0;
    int cur_hysteresis = 1;
    int64_t cur_iter = 0;
    int64_t last_overflow_iter = -1;
  };
  State state() const { return {scale_, cur_hysteresis_, cur_iter_, last_overflow_iter_}; }
  void restore(const State& s);

 private:
  LossScalerConfig cfg_;
  bool dynamic_;
  double scale_;
  int cur_hysteresis_;
  int64_t cur_iter_ = 0;
  int64_t last_overflow_iter_ = -1;
  bool failed_ = false;
};

}  // namespace zt
