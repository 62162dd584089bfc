// AutoFlags: the command-line values that resolve "auto" in a ds_config (the HF Trainer mapping),
// the HF Trainer's defaults for those it leaves unset, and the CLI11 options that fill them; shared
// by `zerotrain check` and the training command.
#pragma once

#include <cstdint>
#include <optional>

namespace CLI {
class App;
}

namespace zt {

// The step count of a run without --steps (and what "total_num_steps": "auto" becomes then).
inline constexpr int64_t kDefaultRunSteps = 200;

struct AutoFlags {
  std::optional<int64_t> micro_batch;   // --micro-batch  -> train_micro_batch_size_per_gpu
  std::optional<int64_t> grad_accum;    // --grad-accum   -> gradient_accumulation_steps
  std::optional<double> lr;             // --lr           -> optimizer.params.lr, scheduler.params.warmup_max_lr
  std::optional<double> weight_decay;   // --weight-decay -> optimizer.params.weight_decay
  std::optional<double> adam_beta1;     // --adam-beta1   -> optimizer.params.betas[0]
  std::optional<double> adam_beta2;     // --adam-beta2   -> optimizer.params.betas[1]
  std::optional<double> adam_eps;       // --adam-eps     -> optimizer.params.eps
  std::optional<double> max_grad_norm;  // --max-grad-norm -> gradient_clipping
  std::optional<int64_t> warmup_steps;  // --warmup-steps -> scheduler.params.warmup_num_steps
  std::optional<double> warmup_ratio;   // --warmup-ratio -> warmup_num_steps = ceil(ratio * steps) (HF's rule)
  std::optional<int64_t> steps;         // --steps        -> scheduler.params.total_num_steps
  bool fp16 = false;                    // --fp16         -> fp16.enabled
  bool bf16 = false;                    // --bf16         -> bf16.enabled
};

// The HF Trainer's TrainingArguments defaults: what "auto" becomes when its flag is not given.
struct TrainerDefaults {
  static constexpr int64_t micro_batch = 8;        // per_device_train_batch_size
  static constexpr int64_t grad_accum = 1;         // gradient_accumulation_steps
  static constexpr double lr = 5e-5;               // learning_rate
  static constexpr double weight_decay = 0.0;      // weight_decay
  static constexpr double adam_beta1 = 0.9;        // adam_beta1
  static constexpr double adam_beta2 = 0.999;      // adam_beta2
  static constexpr double adam_eps = 1e-8;         // adam_epsilon
  static constexpr double max_grad_norm = 1.0;     // max_grad_norm
  static constexpr int64_t warmup_steps = 0;       // warmup_steps (and warmup_ratio 0)
};

// Adds --micro-batch, --grad-accum, --lr, --weight-decay, --adam-beta1, --adam-beta2, --adam-eps,
// --max-grad-norm, --warmup-steps, --warmup-ratio, --steps, --fp16 and --bf16 to `app`, writing into
// `flags` (which must outlive it).
void add_auto_flags(CLI::App& app, AutoFlags& flags);

}  // namespace zt
