// OneCycle implementation: the cycle position, the cycled lr and momentum, and post-cycle decay.
#include "optim/one_cycle.h"

#include <cmath>
#include <stdexcept>

namespace zt {

OneCycleLr::OneCycleLr(const OneCycleParams& p) : p_(p) {
  if (p_.cycle_second_step_size < 0) p_.cycle_second_step_size = p_.cycle_first_step_size;
  if (p_.cycle_second_stair_count < 0) p_.cycle_second_stair_count = p_.cycle_first_stair_count;
  if (p_.cycle_first_step_size <= 0)
    throw std::invalid_argument("scheduler OneCycle: params.cycle_first_step_size = " +
                                std::to_string(p_.cycle_first_step_size) + ": must be positive");
  if (p_.decay_step_size < 0)
    throw std::invalid_argument("scheduler OneCycle: params.decay_step_size = " + std::to_string(p_.decay_step_size) +
                                ": must be >= 0");
  total_size_ = static_cast<double>(p_.cycle_first_step_size + p_.cycle_second_step_size);
  step_ratio_ = static_cast<double>(p_.cycle_first_step_size) / total_size_;
  const bool no_decay_interval = p_.decay_step_size == 0;
  skip_lr_decay_ = no_decay_interval || p_.decay_lr_rate == 0.0;
  skip_mom_decay_ = no_decay_interval || p_.decay_mom_rate == 0.0;
}

double OneCycleLr::scale_factor(int64_t it) const {
  const double b = static_cast<double>(it + 1);
  const double cycle = std::floor(1.0 + b / total_size_);
  const double x = 1.0 + b / total_size_ - cycle;
  const bool rising = x <= step_ratio_;
  const double scale = rising ? x / step_ratio_ : (x - 1.0) / (step_ratio_ - 1.0);
  const int64_t stairs = rising ? p_.cycle_first_stair_count : p_.cycle_second_stair_count;
  if (stairs <= 0) return scale;
  const double c = std::fmod(b, total_size_);
  const double first = static_cast<double>(p_.cycle_first_step_size);
  const double second = static_cast<double>(p_.cycle_second_step_size);
  const double position = c <= first ? c * double(stairs) / first : (total_size_ - c) * double(stairs) / second;
  return std::floor(position) / double(stairs);
}

double OneCycleLr::lr(int64_t it) const {
  if (it < -1) it = -1;
  if (static_cast<double>(it) < total_size_)
    return p_.cycle_min_lr + (p_.cycle_max_lr - p_.cycle_min_lr) * scale_factor(it);
  if (skip_lr_decay_) return p_.cycle_min_lr;
  const double d = static_cast<double>(it) - total_size_ + 1.0;
  return p_.cycle_min_lr / (1.0 + p_.decay_lr_rate * (d / static_cast<double>(p_.decay_step_size)));
}

std::optional<double> OneCycleLr::beta1(int64_t it) const {
  if (!p_.cycle_momentum) return std::nullopt;
  if (it < 0) return p_.cycle_min_mom;  // DeepSpeed's value at construction
  if (static_cast<double>(it) < total_size_)
    return p_.cycle_max_mom - (p_.cycle_max_mom - p_.cycle_min_mom) * scale_factor(it);
  if (skip_mom_decay_) return p_.cycle_max_mom;
  const double d = static_cast<double>(it) - total_size_ + 1.0;
  return p_.cycle_max_mom * (1.0 + p_.decay_mom_rate * (d / static_cast<double>(p_.decay_step_size)));
}

std::optional<double> OneCycleLr::beta2(int64_t it) const {
  if (!p_.cycle_momentum) return std::nullopt;
  return 0.99;
}

}  // namespace zt
