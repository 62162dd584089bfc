// LrScheduler: DeepSpeed's learning-rate schedules (WarmupLR, WarmupDecayLR, WarmupCosineLR,
// OneCycle) and a constant schedule, as pure functions of the iteration, plus a factory by name.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace zt {

// Iteration convention (DeepSpeed's). A scheduler keeps `last_batch_iteration`, which starts at -1
// when the scheduler is built; the engine calls step() after every APPLIED optimizer step (never
// after a step skipped for an fp16 overflow), which increments it and sets the optimizer's lr to
// lr(last_batch_iteration). Therefore:
//   * the 1st applied optimizer step uses lr(-1), the value set at construction:
//       WarmupLR / WarmupDecayLR: warmup_min_lr;  WarmupCosineLR: 0 (DeepSpeed sets lr = 0 until the
//       first step());  OneCycle: cycle_min_lr;  constant: the optimizer's lr;
//   * the k-th applied step (k >= 1) uses lr(k - 2), i.e. lr_for_step(k - 1).
// These objects hold no state: the engine keeps the iteration (and checkpoints it).
class LrScheduler {
 public:
  virtual ~LrScheduler() = default;
  virtual std::string name() const = 0;

  // The lr the scheduler sets when last_batch_iteration == it (it == -1: at construction; any
  // it < -1 is treated as -1).
  virtual double lr(int64_t it) const = 0;

  // Adam's beta1 (SGD: momentum) set alongside the lr, when the schedule drives it (OneCycle with
  // cycle_momentum); nullopt: leave the optimizer's value alone.
  virtual std::optional<double> beta1(int64_t it) const { return std::nullopt; }
  // DeepSpeed's OneCycle, when it cycles momentum, also overwrites Adam's beta2 with 0.99 (its
  // betas tuple is (momentum, 0.99)); nullopt: leave beta2 alone.
  virtual std::optional<double> beta2(int64_t it) const { return std::nullopt; }

  // Convenience: the lr of the optimizer step that follows `applied_steps` applied steps.
  double lr_for_step(int64_t applied_steps) const { return lr(applied_steps - 1); }
  std::optional<double> beta1_for_step(int64_t applied_steps) const { return beta1(applied_steps - 1); }
  std::optional<double> beta2_for_step(int64_t applied_steps) const { return beta2(applied_steps - 1); }
};

// A scheduler's `params` block, flattened by the config module: numbers (booleans as 0 or 1) and
// strings. Unknown keys are rejected so that typos surface at start-up.
struct SchedulerParams {
  std::map<std::string, double> numbers;
  std::map<std::string, std::string> strings;
};

// Builds a scheduler from DeepSpeed's `scheduler.type` and `scheduler.params`. `optimizer_lr` is the
// optimizer's `params.lr` (WarmupCosineLR multiplies it by its ratios; WarmupLR uses it when
// warmup_max_lr is absent). Throws std::invalid_argument whose message names the offending param:
// an unknown type, a missing required param (e.g. "total_num_steps"), an unknown param, a wrongly
// typed value, or an out-of-range value. `last_batch_iteration` L (DeepSpeed's resume point) shifts
// the schedule: the first applied step uses optimizer_lr (DeepSpeed leaves the lr alone when L != -1)
// and later ones continue from L, as DeepSpeed's step() does.
std::unique_ptr<LrScheduler> make_lr_scheduler(const std::string& type, const SchedulerParams& params,
                                               double optimizer_lr);

// The schedule used when the config has no scheduler block: lr(it) == lr for every it.
std::unique_ptr<LrScheduler> make_constant_lr(double lr);

// The scheduler types make_lr_scheduler accepts, for error messages and the config module.
std::vector<std::string> lr_scheduler_types();

}  // namespace zt
