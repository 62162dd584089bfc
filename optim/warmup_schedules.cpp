// WarmupLR, WarmupDecayLR and WarmupCosineLR: DeepSpeed's formulas evaluated in double.
#include "optim/warmup_schedules.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace zt {

namespace {
int64_t clamp_warmup(int64_t w) { return std::max<int64_t>(2, w); }  // DeepSpeed: max(2, warmup_num_steps)
}  // namespace

double warmup_gamma(WarmupType type, int64_t it, int64_t warmup_num_steps) {
  const double w = static_cast<double>(warmup_num_steps);
  if (type == WarmupType::Log) return std::log(static_cast<double>(it) + 1.0) / std::log(w);
  return static_cast<double>(it) / w;
}

WarmupLr::WarmupLr(double warmup_min_lr, double warmup_max_lr, int64_t warmup_num_steps, WarmupType type)
    : min_lr_(warmup_min_lr), max_lr_(warmup_max_lr), warmup_(clamp_warmup(warmup_num_steps)), type_(type) {}

double WarmupLr::lr(int64_t it) const {
  if (it < 0) return min_lr_;
  const double gamma = it < warmup_ ? warmup_gamma(type_, it, warmup_) : gamma_after_warmup(it);
  return min_lr_ + (max_lr_ - min_lr_) * gamma;
}

WarmupDecayLr::WarmupDecayLr(int64_t total_num_steps, double warmup_min_lr, double warmup_max_lr,
                             int64_t warmup_num_steps, WarmupType type)
    : WarmupLr(warmup_min_lr, warmup_max_lr, warmup_num_steps, type), total_(total_num_steps) {}

double WarmupDecayLr::gamma_after_warmup(int64_t it) const {
  const double span = std::max(1.0, static_cast<double>(total_ - warmup_));
  return std::max(0.0, static_cast<double>(total_ - it) / span);
}

WarmupCosineLr::WarmupCosineLr(double optimizer_lr, int64_t total_num_steps, double warmup_min_ratio,
                               int64_t warmup_num_steps, double cos_min_ratio, WarmupType type)
    : base_lr_(optimizer_lr),
      total_(total_num_steps),
      warmup_min_ratio_(warmup_min_ratio),
      warmup_(clamp_warmup(warmup_num_steps)),
      cos_min_ratio_(cos_min_ratio),
      type_(type) {}

double WarmupCosineLr::ratio(int64_t it) const {
  if (it < warmup_) {
    const double gamma = warmup_gamma(type_, it, warmup_);
    return warmup_min_ratio_ + gamma * (1.0 - warmup_min_ratio_);
  }
  // DeepSpeed 0.19.5 clamps the progress at 1: past total_num_steps (and for every step after warmup
  // when total_num_steps <= warmup_num_steps) the ratio stays at cos_min_ratio.
  const double s = static_cast<double>(it - warmup_ + 1);
  const double span = static_cast<double>(std::max<int64_t>(1, total_ - warmup_));
  const double progress = std::min(1.0, s / span);
  const double cosine = (1.0 + std::cos(std::numbers::pi * progress)) / 2.0;
  return std::max(0.0, cos_min_ratio_ + (1.0 - cos_min_ratio_) * cosine);
}

double WarmupCosineLr::lr(int64_t it) const {
  if (it < 0) return 0.0;
  return base_lr_ * ratio(it);
}

}  // namespace zt
