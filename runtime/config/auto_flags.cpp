// The "auto"-resolving command-line flags, registered on a CLI11 app.
#include "runtime/config/auto_flags.h"

#include <CLI/CLI.hpp>

namespace zt {

namespace {
template <class T>
void opt(CLI::App& app, const char* name, std::optional<T>& slot, const char* help) {
  app.add_option_function<T>(name, [&slot](const T& v) { slot = v; }, help);
}
}  // namespace

void add_auto_flags(CLI::App& app, AutoFlags& f) {
  opt(app, "--micro-batch", f.micro_batch, "micro batch per rank (resolves train_micro_batch_size_per_gpu)");
  opt(app, "--grad-accum", f.grad_accum, "gradient accumulation steps (resolves gradient_accumulation_steps)");
  opt(app, "--lr", f.lr, "learning rate (resolves optimizer.params.lr and scheduler.params.warmup_max_lr)");
  opt(app, "--weight-decay", f.weight_decay, "weight decay (resolves optimizer.params.weight_decay)");
  opt(app, "--adam-beta1", f.adam_beta1, "Adam beta1 (resolves optimizer.params.betas[0])");
  opt(app, "--adam-beta2", f.adam_beta2, "Adam beta2 (resolves optimizer.params.betas[1])");
  opt(app, "--adam-eps", f.adam_eps, "Adam epsilon (resolves optimizer.params.eps)");
  opt(app, "--max-grad-norm", f.max_grad_norm, "gradient clipping norm (resolves gradient_clipping)");
  opt(app, "--warmup-steps", f.warmup_steps, "warmup steps (resolves scheduler.params.warmup_num_steps)");
  opt(app, "--warmup-ratio", f.warmup_ratio,
      "warmup as a share of --steps: ceil(ratio * steps), used when --warmup-steps is not given (the HF rule)");
  opt(app, "--steps", f.steps, "total training steps (resolves scheduler.params.total_num_steps)");
  app.add_flag("--fp16", f.fp16, "fp16 mixed precision (resolves \"fp16\": {\"enabled\": \"auto\"}; off when not given)");
  app.add_flag("--bf16", f.bf16, "bf16 mixed precision (resolves \"bf16\": {\"enabled\": \"auto\"}; off when not given)");
}

}  // namespace zt
