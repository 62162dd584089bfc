// The warmup family of DeepSpeed's schedules: WarmupLR (warm up, then hold), WarmupDecayLR (then
// decay linearly to 0) and WarmupCosineLR (ratios of the optimizer's lr, then cosine decay).
#pragma once

#include <cstdint>
#include <string>

#include "optim/lr_scheduler.h"

namespace zt {

enum class WarmupType { Log, Linear };

// gamma in [0, 1] during warmup (DeepSpeed): log: ln(it + 1) / ln(W); linear: it / W; W is
// warmup_num_steps after DeepSpeed's clamp to at least 2. Only meaningful for 0 <= it < W.
double warmup_gamma(WarmupType type, int64_t it, int64_t warmup_num_steps);

// lr(it) = min + (max - min) * gamma(it) while it < W, then max. lr(-1) = min.
class WarmupLr : public LrScheduler {
 public:
  WarmupLr(double warmup_min_lr, double warmup_max_lr, int64_t warmup_num_steps, WarmupType type);
  std::string name() const override { return "WarmupLR"; }
  double lr(int64_t it) const override;
  int64_t warmup_num_steps() const { return warmup_; }

 protected:
  virtual double gamma_after_warmup(int64_t it) const { return 1.0; }
  double min_lr_, max_lr_;
  int64_t warmup_;
  WarmupType type_;
};

// As WarmupLR during warmup; then gamma = max(0, (T - it) / max(1, T - W)).
class WarmupDecayLr : public WarmupLr {
 public:
  WarmupDecayLr(int64_t total_num_steps, double warmup_min_lr, double warmup_max_lr, int64_t warmup_num_steps,
                WarmupType type);
  std::string name() const override { return "WarmupDecayLR"; }

 protected:
  double gamma_after_warmup(int64_t it) const override;
  int64_t total_;
};

// lr(it) = optimizer_lr * ratio(it). Warmup: ratio = min_ratio + (1 - min_ratio) * gamma(it).
// After: s = it - W + 1, S = max(1, T - W), p = min(1, s / S),
// ratio = max(0, cos_min + (1 - cos_min) * (1 + cos(pi p)) / 2): the floor cos_min from T on, and
// right after warmup when T <= W (DeepSpeed 0.19.5). lr(-1) = 0 (DeepSpeed sets 0 until the first step()).
class WarmupCosineLr : public LrScheduler {
 public:
  WarmupCosineLr(double optimizer_lr, int64_t total_num_steps, double warmup_min_ratio, int64_t warmup_num_steps,
                 double cos_min_ratio, WarmupType type);
  std::string name() const override { return "WarmupCosineLR"; }
  double lr(int64_t it) const override;
  double ratio(int64_t it) const;  // lr(it) / optimizer_lr for it >= 0

 private:
  double base_lr_;
  int64_t total_;
  double warmup_min_ratio_;
  int64_t warmup_;
  double cos_min_ratio_;
  WarmupType type_;
};

}  // namespace zt
