// The run's config: the user's ds_config, or the built-in one in which every tunable is "auto" and
// resolved from the flags, with the flags' defaults filled in (the HF Trainer's way of working).
#include <algorithm>

#include "runtime/common/diagnostics.h"
#include "runtime/config/config_load.h"
#include "runtime/train/training_run.h"

namespace zt {

namespace {

// Everything a user would tune is "auto", so each value comes from a flag or its default below.
constexpr const char* kBuiltinConfig = R"({
  "train_micro_batch_size_per_gpu": "auto",
  "gradient_accumulation_steps": "auto",
  "gradient_clipping": "auto",
  "steps_per_print": 10,
  "fp16": {"enabled": "auto"},
  "bf16": {"enabled": "auto"},
  "optimizer": {"type": "AdamW",
                "params": {"lr": "auto", "betas": "auto", "eps": "auto", "weight_decay": "auto"}},
  "scheduler": {"type": "WarmupCosineLR",
                "params": {"warmup_num_steps": "auto", "total_num_steps": "auto", "warmup_type": "linear"}},
  "zero_optimization": {"stage": 0}
})";

AutoFlags with_defaults(AutoFlags f, int64_t steps) {
  if (!f.micro_batch) f.micro_batch = 8;
  if (!f.grad_accum) f.grad_accum = 1;
  if (!f.lr) f.lr = 3e-3;
  if (!f.weight_decay) f.weight_decay = 0.1;
  if (!f.adam_beta1) f.adam_beta1 = 0.9;
  if (!f.adam_beta2) f.adam_beta2 = 0.95;
  if (!f.adam_eps) f.adam_eps = 1e-8;
  if (!f.max_grad_norm) f.max_grad_norm = 1.0;
  if (!f.warmup_steps && !f.warmup_ratio) f.warmup_steps = std::clamp<int64_t>(steps / 10, 1, 100);
  return f;
}

}  // namespace

LoadResult load_run_config(const RunOptions& o, int world_size, ComputeBackend backend) {
  LoadOptions lo;
  lo.world_size = world_size;
  lo.world_source = WorldSizeSource::Launch;
  lo.allow_unknown_keys = o.allow_unknown_keys;
  lo.model_hidden = o.model.dim;
  lo.model = o.model;
  lo.backend = backend;
  const bool builtin = o.config_path.empty();
  lo.flags = builtin ? with_defaults(o.flags, o.flags.steps.value_or(kDefaultRunSteps)) : o.flags;
  // The built-in config trains in the backend's precision unless a flag chooses: bf16 on CUDA, fp32 on CPU.
  if (builtin && backend == ComputeBackend::Cuda && !lo.flags.fp16) lo.flags.bf16 = true;
  return builtin ? load_config_text(kBuiltinConfig, "<built-in config>", lo) : load_config(o.config_path, lo);
}

}  // namespace zt
