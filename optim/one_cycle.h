// OneCycle: DeepSpeed's 1Cycle policy — lr rises from cycle_min_lr to cycle_max_lr and back over
// one cycle (momentum moves inversely), then decays; formulas evaluated in double.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "optim/lr_scheduler.h"

namespace zt {

struct OneCycleParams {
  double cycle_min_lr = 0.0;  // required
  double cycle_max_lr = 0.0;  // required
  double decay_lr_rate = 0.0;
  int64_t cycle_first_step_size = 2000;
  int64_t cycle_second_step_size = -1;  // < 0: equal to cycle_first_step_size (0 is a valid size)
  // Staircase (DeepSpeed 0.19.4 and later): the lr and momentum hold for that many equal stairs of each
  // half of the cycle instead of moving every step; 0 = continuous.
  int64_t cycle_first_stair_count = 0;
  int64_t cycle_second_stair_count = -1;  // < 0: equal to cycle_first_stair_count
  int64_t decay_step_size = 0;  // 0: no decay after the cycle (lr stays at cycle_min_lr)
  bool cycle_momentum = true;
  double cycle_min_mom = 0.8;
  double cycle_max_mom = 0.9;
  double decay_mom_rate = 0.0;
};

// With b = it + 1, C = first + second, r = first / C, x = 1 + b/C - floor(1 + b/C):
//   scale = x / r when x <= r, else (x - 1) / (r - 1);
//   with a stair count n > 0 for that half (c = b mod C): scale = floor(c n / first) / n while
//   c <= first, else floor((C - c) n / second) / n (stairs counted from the integer step, as DeepSpeed);
//   in the cycle (it < C):  lr = min_lr + (max_lr - min_lr) * scale,
//                           mom = max_mom - (max_mom - min_mom) * scale;
//   after (d = it - C + 1): lr = min_lr / (1 + decay_lr_rate * d / decay_step_size),
//                           mom = max_mom * (1 + decay_mom_rate * d / decay_step_size)
//   (no decay, lr = min_lr and mom = max_mom, when decay_step_size is 0 or the rate is 0).
// At construction (it = -1) DeepSpeed sets lr = cycle_min_lr and beta1 = cycle_min_mom (not the
// formula's max_mom); beta2 becomes 0.99 whenever momentum is cycled. DeepSpeed turns momentum
// cycling off for optimizers without betas (SGD): the engine should ignore beta1() for SGD.
class OneCycleLr : public LrScheduler {
 public:
  explicit OneCycleLr(const OneCycleParams& p);
  std::string name() const override { return "OneCycle"; }
  double lr(int64_t it) const override;
  std::optional<double> beta1(int64_t it) const override;
  std::optional<double> beta2(int64_t it) const override;
  double scale_factor(int64_t it) const;  // the cycle position in [0, 1] (quantised by the stairs)

 private:
  OneCycleParams p_;
  double total_size_;
  double step_ratio_;
  bool skip_lr_decay_;
  bool skip_mom_decay_;
};

}  // namespace zt
