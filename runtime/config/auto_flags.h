// AutoFlags: the command-line values that resolve "auto" in a ds_config (the HF Trainer mapping),
// and the CLI11 options that fill them; shared by `zerotrain check` and the training command.
#pragma once

#include <cstdint>
#include <optional>

namespace CLI {
class App;
}

namespace zt {

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
  std::optional<int64_t> steps;         // --steps        -> scheduler.params.total_num_steps
};

// Adds --micro-batch, --grad-accum, --lr, --weight-decay, --adam-beta1, --adam-beta2, --adam-eps,
// --max-grad-norm, --warmup-steps and --steps to `app`, writing into `flags` (which must outlive it).
void add_auto_flags(CLI::App& app, AutoFlags& flags);

}  // namespace zt
