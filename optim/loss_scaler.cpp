// LossScaler implementation: validation of the fp16 keys and DeepSpeed's update_scale transitions.
#include "optim/loss_scaler.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace zt {

namespace {
std::string num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}
[[noreturn]] void bad(const std::string& key, const std::string& value, const std::string& problem) {
  throw std::invalid_argument("fp16." + key + " = " + value + ": " + problem);
}
}  // namespace

bool is_skip(LossScaleEvent e) { return e != LossScaleEvent::Applied && e != LossScaleEvent::AppliedAndGrew; }

const char* loss_scale_event_name(LossScaleEvent e) {
  switch (e) {
    case LossScaleEvent::Applied: return "applied";
    case LossScaleEvent::AppliedAndGrew: return "applied_and_grew";
    case LossScaleEvent::SkippedHysteresis: return "skipped_hysteresis";
    case LossScaleEvent::SkippedLowered: return "skipped_lowered";
    case LossScaleEvent::SkippedStatic: return "skipped_static";
    case LossScaleEvent::OverflowAtMinimum: return "overflow_at_minimum";
  }
  return "?";
}

LossScaler::LossScaler(const LossScalerConfig& cfg) : cfg_(cfg), dynamic_(cfg.loss_scale == 0.0) {
  if (!(cfg.loss_scale >= 0.0) || !std::isfinite(cfg.loss_scale))
    bad("loss_scale", num(cfg.loss_scale), "must be 0 (dynamic) or a positive static scale");
  if (cfg.initial_scale_power < -1022 || cfg.initial_scale_power > 1023)
    bad("initial_scale_power", std::to_string(cfg.initial_scale_power), "must be in [-1022, 1023] (2^power a finite double)");
  if (cfg.loss_scale_window < 1)
    bad("loss_scale_window", std::to_string(cfg.loss_scale_window), "must be >= 1");
  if (cfg.hysteresis < 1) bad("hysteresis", std::to_string(cfg.hysteresis), "must be >= 1");
  if (!(cfg.min_loss_scale > 0.0) || !std::isfinite(cfg.min_loss_scale))
    bad("min_loss_scale", num(cfg.min_loss_scale), "must be positive");
  scale_ = dynamic_ ? std::ldexp(1.0, cfg.initial_scale_power) : cfg.loss_scale;
  cur_hysteresis_ = cfg.hysteresis;
}

LossScaleEvent LossScaler::update(bool overflow) {
  if (!dynamic_) {
    ++cur_iter_;
    return overflow ? LossScaleEvent::SkippedStatic : LossScaleEvent::Applied;
  }
  LossScaleEvent ev = LossScaleEvent::Applied;
  const bool zero = cfg_.kind == LossScalerKind::ZeroOptimizer;
  if (overflow && !zero) {
    scale_ = std::max(scale_ / 2.0, cfg_.min_loss_scale);
    ev = LossScaleEvent::SkippedLowered;
    last_overflow_iter_ = cur_iter_;
  } else if (overflow) {
    if (cfg_.hysteresis == 1 || cur_hysteresis_ == 1) {
      if (scale_ == cfg_.min_loss_scale) {
        failed_ = true;
        ev = LossScaleEvent::OverflowAtMinimum;
      } else {
        scale_ = std::max(scale_ / 2.0, cfg_.min_loss_scale);
        ev = LossScaleEvent::SkippedLowered;
      }
    } else {
      --cur_hysteresis_;
      ev = LossScaleEvent::SkippedHysteresis;
    }
    last_overflow_iter_ = cur_iter_;
  } else {
    if (zero && cfg_.consecutive_hysteresis) cur_hysteresis_ = cfg_.hysteresis;
    const int64_t stable = cur_iter_ - last_overflow_iter_ - 1;
    if (stable > 0 && stable % cfg_.loss_scale_window == 0) {
      if (zero && !cfg_.consecutive_hysteresis) cur_hysteresis_ = cfg_.hysteresis;
      scale_ *= 2.0;
      ev = LossScaleEvent::AppliedAndGrew;
    }
  }
  ++cur_iter_;
  return ev;
}

std::string LossScaler::failure_message() const {
  if (!failed_) return {};
  return "fp16 loss scale is at min_loss_scale=" + num(cfg_.min_loss_scale) +
         " and the step overflowed again: the gradients are inf/nan even at the smallest allowed scale (overflow at "
         "loss-scaler iteration " +
         std::to_string(last_overflow_iter_) +
         "), so the problem is numerical, not the scale. fix: use bf16, lower the lr, or raise min_loss_scale";
}

void LossScaler::restore(const State& s) {
  scale_ = s.scale;
  cur_hysteresis_ = s.cur_hysteresis;
  cur_iter_ = s.cur_iter;
  last_overflow_iter_ = s.last_overflow_iter;
  failed_ = false;
}

}  // namespace zt
