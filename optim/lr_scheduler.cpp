// The constant schedule and make_lr_scheduler: DeepSpeed's scheduler names, params and defaults.
#include "optim/lr_scheduler.h"

#include <stdexcept>

#include "optim/one_cycle.h"
#include "optim/param_reader.h"
#include "optim/warmup_schedules.h"

namespace zt {

namespace {

class ConstantLr : public LrScheduler {
 public:
  explicit ConstantLr(double lr) : lr_(lr) {}
  std::string name() const override { return "constant"; }
  double lr(int64_t) const override { return lr_; }

 private:
  double lr_;
};

WarmupType read_warmup_type(ParamReader& r) {
  return r.string("warmup_type", "log", {"log", "linear"}) == "linear" ? WarmupType::Linear : WarmupType::Log;
}

int64_t read_warmup_steps(ParamReader& r) {
  const int64_t w = r.integer("warmup_num_steps", 1000);
  if (w < 1) r.fail("warmup_num_steps", std::to_string(w), "must be a positive integer (DeepSpeed raises ValueError)");
  return w;
}

// DeepSpeed's last_batch_iteration L != -1 (a resumed schedule): the constructor leaves the
// optimizer's lr alone, so the first applied step uses the optimizer's lr, and each later step()
// continues from L: lr(it) = inner.lr(it + L + 1) for it >= 0.
class ResumedSchedule : public LrScheduler {
 public:
  ResumedSchedule(std::unique_ptr<LrScheduler> inner, int64_t last, double optimizer_lr)
      : inner_(std::move(inner)), shift_(last + 1), base_lr_(optimizer_lr) {}
  std::string name() const override { return inner_->name(); }
  double lr(int64_t it) const override { return it < 0 ? base_lr_ : inner_->lr(it + shift_); }
  std::optional<double> beta1(int64_t it) const override { return it < 0 ? std::nullopt : inner_->beta1(it + shift_); }
  std::optional<double> beta2(int64_t it) const override { return it < 0 ? std::nullopt : inner_->beta2(it + shift_); }

 private:
  std::unique_ptr<LrScheduler> inner_;
  int64_t shift_;
  double base_lr_;
};

std::unique_ptr<LrScheduler> build(const std::string& type, ParamReader& r, double optimizer_lr) {
  if (type == "WarmupLR") {
    const double min_lr = r.number("warmup_min_lr", 0.0);
    // Recent DeepSpeed: warmup_max_lr defaults to the optimizer's lr.
    const double max_lr = r.number("warmup_max_lr", optimizer_lr);
    const int64_t w = read_warmup_steps(r);
    return std::make_unique<WarmupLr>(min_lr, max_lr, w, read_warmup_type(r));
  }
  if (type == "WarmupDecayLR") {
    const int64_t total = r.integer("total_num_steps");
    if (total <= 0) r.fail("total_num_steps", std::to_string(total), "must be positive");
    const double min_lr = r.number("warmup_min_lr", 0.0);
    const double max_lr = r.number("warmup_max_lr", 0.001);  // DeepSpeed's default for this class
    const int64_t w = read_warmup_steps(r);
    return std::make_unique<WarmupDecayLr>(total, min_lr, max_lr, w, read_warmup_type(r));
  }
  if (type == "WarmupCosineLR") {
    const int64_t total = r.integer("total_num_steps");
    if (total <= 0) r.fail("total_num_steps", std::to_string(total), "must be positive");
    const double min_ratio = r.number("warmup_min_ratio", 0.0);
    const int64_t w = read_warmup_steps(r);
    const double cos_min = r.number("cos_min_ratio", 0.0001);
    return std::make_unique<WarmupCosineLr>(optimizer_lr, total, min_ratio, w, cos_min, read_warmup_type(r));
  }
  if (type == "OneCycle") {
    OneCycleParams p;
    p.cycle_min_lr = r.number("cycle_min_lr");
    p.cycle_max_lr = r.number("cycle_max_lr");
    p.decay_lr_rate = r.number("decay_lr_rate", p.decay_lr_rate);
    p.cycle_first_step_size = r.integer("cycle_first_step_size", p.cycle_first_step_size);
    p.cycle_second_step_size = r.integer("cycle_second_step_size", p.cycle_second_step_size);
    p.cycle_first_stair_count = r.integer("cycle_first_stair_count", p.cycle_first_stair_count);
    p.cycle_second_stair_count = r.integer("cycle_second_stair_count", p.cycle_second_stair_count);
    p.decay_step_size = r.integer("decay_step_size", p.decay_step_size);
    p.cycle_momentum = r.boolean("cycle_momentum", p.cycle_momentum);
    p.cycle_min_mom = r.number("cycle_min_mom", p.cycle_min_mom);
    p.cycle_max_mom = r.number("cycle_max_mom", p.cycle_max_mom);
    p.decay_mom_rate = r.number("decay_mom_rate", p.decay_mom_rate);
    if (p.cycle_first_step_size <= 0)
      r.fail("cycle_first_step_size", std::to_string(p.cycle_first_step_size), "must be positive");
    if (r.has("cycle_second_step_size") && p.cycle_second_step_size < 0)
      r.fail("cycle_second_step_size", std::to_string(p.cycle_second_step_size), "must be >= 0");
    if (p.decay_step_size < 0) r.fail("decay_step_size", std::to_string(p.decay_step_size), "must be >= 0");
    return std::make_unique<OneCycleLr>(p);
  }
  std::string list;
  for (const auto& t : lr_scheduler_types()) list += (list.empty() ? "" : ", ") + t;
  throw std::invalid_argument("scheduler.type = \"" + type + "\": unknown scheduler; supported: " + list);
}

}  // namespace

std::vector<std::string> lr_scheduler_types() { return {"WarmupLR", "WarmupDecayLR", "WarmupCosineLR", "OneCycle"}; }

std::unique_ptr<LrScheduler> make_constant_lr(double lr) { return std::make_unique<ConstantLr>(lr); }

std::unique_ptr<LrScheduler> make_lr_scheduler(const std::string& type, const SchedulerParams& params,
                                               double optimizer_lr) {
  ParamReader r("scheduler " + type, params.numbers, params.strings);
  // DeepSpeed accepts last_batch_iteration (a resume point) in every scheduler's params.
  const int64_t last = r.integer("last_batch_iteration", -1);
  if (last < -1) r.fail("last_batch_iteration", std::to_string(last), "must be >= -1");
  auto s = build(type, r, optimizer_lr);
  r.reject_unknown();
  if (last != -1) return std::make_unique<ResumedSchedule>(std::move(s), last, optimizer_lr);
  return s;
}

}  // namespace zt
