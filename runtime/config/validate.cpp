// Invalid combinations and out-of-range values in a loaded ds_config: each its own message with
// the key path, the value and the fix (the table in configs/README.md lists them all).
#include <algorithm>
#include <cmath>
#include <sstream>

#include "base/stage_traits.h"
#include "runtime/config/config_load.h"
#include "runtime/config/config_walk.h"
#include "runtime/plan/machine_probe.h"

namespace zt {
namespace {


void check_nvme_path(const OffloadConfig& o, const std::string& block, bool probe, Diagnostics& d) {
  if (o.device.value != "nvme" || o.device.invalid) return;
  const std::string path = "zero_optimization." + block + ".nvme_path";
  if (o.nvme_path.value.empty()) {
    d.error(path, "", "offload device \"nvme\" needs nvme_path (the folder the swap files go to)",
            "add \"nvme_path\": \"/local_nvme\" (a folder on a local NVMe drive) to zero_optimization." + block);
    return;
  }
  if (!probe) return;
  const PathInfo p = probe_path(o.nvme_path.value);
  const std::string v = quoted_text(o.nvme_path.value);
  if (!p.exists) {
    d.error(path, v, "the path does not exist", "create it (mkdir -p " + o.nvme_path.value + ") or point nvme_path at an existing folder");
  } else if (!p.is_dir) {
    d.error(path, v, "the path is not a directory", "point nvme_path at a folder, not a file");
  } else {
    if (!p.writable) d.error(path, v, "the directory is not writable by this user", "fix its permissions or choose a writable folder");
    if (p.is_network)
      d.error(path, v, "the directory lies on a network file system (" + p.fs_type + "); NVMe offload there is catastrophically slow",
              "point nvme_path at a local NVMe drive");
  }
}

void check_positive(const Field<int64_t>& f, const std::string& path, Diagnostics& d, int64_t min = 1) {
  if (f.invalid || f.is_auto || f.value >= min) return;
  d.error(path, std::to_string(f.value), "must be at least " + std::to_string(min), "use a value >= " + std::to_string(min));
}

void check_range(const Field<double>& f, const std::string& path, Diagnostics& d, double lo, bool lo_open, double hi,
                 bool hi_open, const std::string& what) {
  if (f.invalid || f.is_auto) return;
  const double v = f.value;
  const bool ok = std::isfinite(v) && (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi);
  if (!ok) d.error(path, number_text(v), "out of range: must be " + what, "use a value " + what);
}

// The scheduler's params with DeepSpeed's own limits (runtime/lr_schedules.py of 0.19.5).
void validate_scheduler(Config& c, Diagnostics& d) {
  auto& s = c.scheduler;
  if (!s.present || s.type.value.empty()) return;
  const std::string& t = s.type.value;
  if (t == "OneCycle") {
    for (const auto& [f, name] : {std::pair{&s.cycle_min_lr, "cycle_min_lr"}, std::pair{&s.cycle_max_lr, "cycle_max_lr"}})
      if (!f->present)
        d.error(std::string("scheduler.params.") + name, "", std::string("OneCycle needs ") + name,
                "add \"cycle_min_lr\" and \"cycle_max_lr\" to scheduler.params (the lr range of the cycle)");
    check_positive(s.cycle_first_step_size, "scheduler.params.cycle_first_step_size", d);
    if (s.cycle_second_step_size.present) check_positive(s.cycle_second_step_size, "scheduler.params.cycle_second_step_size", d, 0);
    if (!s.decay_step_size.invalid && s.decay_step_size.value < 0)
      d.error("scheduler.params.decay_step_size", std::to_string(s.decay_step_size.value),
              "negative: DeepSpeed accepts it, but the decayed lr min_lr / (1 + rate * steps / size) then goes "
              "negative or infinite",
              "use 0 (no decay after the cycle) or a positive step count");
    if (c.optimizer.type.value == "SGD" && s.cycle_momentum.value)
      d.warning("scheduler.params.cycle_momentum", "true",
                "has no effect with SGD: DeepSpeed turns momentum cycling off for optimizers without betas, and so "
                "does zerotrain",
                "set cycle_momentum false");
    return;
  }
  if (t == "WarmupDecayLR" || t == "WarmupCosineLR") {
    if (!s.total_num_steps.present && s.total_num_steps.source.kind == SourceKind::Default)
      d.error("scheduler.params.total_num_steps", "", t + " needs total_num_steps (the step the decay ends at)",
              "add \"total_num_steps\" to scheduler.params (or \"auto\" with --steps N)");
    else if (!s.total_num_steps.invalid && s.total_num_steps.value < 0)
      d.error("scheduler.params.total_num_steps", std::to_string(s.total_num_steps.value),
              "negative: the decay would end before training starts", "use the number of optimizer steps of the run");
  }
  auto& w = s.warmup_num_steps;
  if (!w.invalid && w.value < 1) {
    const bool from_trainer = w.source.kind == SourceKind::Auto && w.source.detail.find("HF Trainer") != std::string::npos;
    d.error("scheduler.params.warmup_num_steps", std::to_string(w.value),
            t + " needs at least one warmup step (DeepSpeed raises ValueError: warmup_num_steps must be a positive "
                "integer)" + (from_trainer ? "; 0 is the HF Trainer's default, taken because --warmup-steps and "
                                             "--warmup-ratio were not given" : ""),
            from_trainer ? "pass --warmup-steps N or --warmup-ratio R" : "use 1 or more (DeepSpeed clamps it to at least 2)");
  }
  if (t != "WarmupCosineLR") {
    check_range(s.warmup_min_lr, "scheduler.params.warmup_min_lr", d, 0, false, INFINITY, true, ">= 0 and finite");
    check_range(s.warmup_max_lr, "scheduler.params.warmup_max_lr", d, 0, false, INFINITY, true, ">= 0 and finite");
    if (!s.warmup_min_lr.invalid && !s.warmup_max_lr.invalid && s.warmup_min_lr.value > s.warmup_max_lr.value)
      d.error("scheduler.params.warmup_min_lr", number_text(s.warmup_min_lr.value),
              "greater than warmup_max_lr " + number_text(s.warmup_max_lr.value), "make warmup_min_lr <= warmup_max_lr");
  }
  if (t != "WarmupLR" && !s.total_num_steps.invalid && !w.invalid && w.value > s.total_num_steps.value && w.value >= 1)
    d.warning("scheduler.params.warmup_num_steps", std::to_string(w.value),
              "longer than total_num_steps " + std::to_string(s.total_num_steps.value) +
                  ": DeepSpeed only warns, and the lr falls to its floor as soon as warmup ends",
              "make warmup_num_steps <= total_num_steps");
}

}  // namespace

void check_nvme_paths_here(const Config& c, Diagnostics& d) {
  const auto& z = c.zero_optimization;
  if (z.offload_optimizer.device.value == "nvme" && !z.offload_optimizer.nvme_path.value.empty())
    check_nvme_path(z.offload_optimizer, "offload_optimizer", true, d);
  if (z.offload_param.device.value == "nvme" && !z.offload_param.nvme_path.value.empty())
    check_nvme_path(z.offload_param, "offload_param", true, d);
}

void validate_config(Config& c, const LoadOptions& opts, Diagnostics& d) {
  auto& z = c.zero_optimization;
  const double inf = INFINITY;
  const int64_t stage = z.stage.value;
  const bool stage_ok = !z.stage.invalid && is_zero_stage(stage);
  // What the stage does (read only when stage_ok): gathers_params is stage 3, all_reduces_grads stage 0.
  const StageTraits traits = stage_traits(int(std::clamp<int64_t>(stage, 0, kMaxZeroStage)));
  if (!z.stage.invalid && !stage_ok)
    d.error("zero_optimization.stage", std::to_string(stage), "ZeRO stage must be 0, 1, 2 or 3",
            "use 0 (no partitioning), 1 (optimizer states), 2 (+ gradients) or 3 (+ parameters)");

  // Precision.
  if (c.fp16.enabled.value && c.bf16.enabled.value)
    d.error("fp16.enabled", "true", "fp16 and " + c.bf16.spelling + " are both enabled; they are mutually exclusive",
            "set \"enabled\": false in one of them (bf16 on Ampere or newer, fp16 on older GPUs)");
  auto& f = c.fp16;
  check_range(f.loss_scale, "fp16.loss_scale", d, 0, false, inf, true, ">= 0 and finite (0 = dynamic scaling)");
  // DeepSpeed validates the window and the floor only when fp16 is on with dynamic scaling.
  const bool dynamic = f.loss_scale.value == 0 && f.enabled.value;
  if (dynamic) {
    if (!f.loss_scale_window.invalid && f.loss_scale_window.value < 1)
      d.error("fp16.loss_scale_window", std::to_string(f.loss_scale_window.value),
              "must be at least 1 with dynamic loss scaling (DeepSpeed refuses it too: the window divides)", "use 1000 (usual)");
    if (!f.min_loss_scale.invalid && f.min_loss_scale.value < 1)
      d.error("fp16.min_loss_scale", std::to_string(f.min_loss_scale.value),
              "out of range: must be > 0 with dynamic loss scaling (DeepSpeed refuses it too; it is an integer there)",
              "use 1 (usual)");
    if (!f.hysteresis.invalid && f.hysteresis.value < 1)
      d.error("fp16.hysteresis", std::to_string(f.hysteresis.value),
              "must be at least 1: DeepSpeed accepts it but then never lowers the scale (every overflow only "
              "decrements the hysteresis further), so training skips every step after the first overflow",
              "use 2 (DeepSpeed's default) or 1 (halve at the first overflow)");
    if (!f.initial_scale_power.invalid && (f.initial_scale_power.value < -1022 || f.initial_scale_power.value > 1023))
      d.error("fp16.initial_scale_power", std::to_string(f.initial_scale_power.value),
              "out of range: the starting scale 2^power must be a finite number", "use 16 (usual); -1022..1023 are accepted");
  }

  // ZeRO and offload.
  auto& oo = z.offload_optimizer;
  auto& op = z.offload_param;
  if (stage_ok && op.device.value != "none" && !traits.gathers_params())
    d.error("zero_optimization.offload_param.device", quoted_text(op.device.value),
            "parameter offload needs ZeRO stage 3, and stage is " + std::to_string(stage) +
                " (DeepSpeed ignores it silently; zerotrain refuses)",
            "set zero_optimization.stage to 3, or remove offload_param");
  if (stage_ok && oo.device.value != "none" && traits.all_reduces_grads())
    d.error("zero_optimization.offload_optimizer.device", quoted_text(oo.device.value),
            "optimizer offload needs ZeRO stage 1, 2 or 3, and stage is 0", "set zero_optimization.stage to 1, 2 or 3, or remove offload_optimizer");
  if (!oo.ratio.invalid) {
    if (!(oo.ratio.value >= 0 && oo.ratio.value <= 1))
      d.error("zero_optimization.offload_optimizer.ratio", number_text(oo.ratio.value), "out of range: the offloaded fraction must be in [0, 1]",
              "use a value in [0, 1] (1 offloads all optimizer state, 0 none of it)");
  }
  // Below 1, the ratio's stage and device are a ZeRO rule (validate_engine.cpp words it).
  if (oo.ratio.present && oo.device.value == "none")
    d.warning("zero_optimization.offload_optimizer.ratio", number_text(oo.ratio.value), "has no effect: offload_optimizer.device is \"none\"",
              "set device to \"cpu\", or remove ratio");
  check_nvme_path(oo, "offload_optimizer", opts.probe_paths, d);
  check_nvme_path(op, "offload_param", opts.probe_paths, d);
  // DeepSpeed's config models accept 0 for every size and count (ge=0); configs/README.md says what
  // each 0 means. NVMe swapping needs at least one buffer of at least one element.
  for (auto [fld, name] : {std::pair{&oo.buffer_count, "offload_optimizer.buffer_count"}, std::pair{&op.buffer_count, "offload_param.buffer_count"},
                           std::pair{&op.buffer_size, "offload_param.buffer_size"}, std::pair{&op.max_in_cpu, "offload_param.max_in_cpu"},
                           std::pair{&z.reduce_bucket_size, "reduce_bucket_size"}, std::pair{&z.allgather_bucket_size, "allgather_bucket_size"},
                           std::pair{&z.sub_group_size, "sub_group_size"}, std::pair{&z.prefetch_bucket_size, "stage3_prefetch_bucket_size"},
                           std::pair{&z.max_live_parameters, "stage3_max_live_parameters"},
                           std::pair{&z.param_persistence_threshold, "stage3_param_persistence_threshold"},
                           std::pair{&z.model_persistence_threshold, "stage3_model_persistence_threshold"},
                           std::pair{&z.max_reuse_distance, "stage3_max_reuse_distance"}})
    check_positive(*fld, std::string("zero_optimization.") + name, d, 0);
  for (auto [blk, name] : {std::pair{&oo, "offload_optimizer"}, std::pair{&op, "offload_param"}}) {
    if (blk->device.value != "nvme" || blk->buffer_count.invalid || blk->buffer_count.value != 0) continue;
    d.error(std::string("zero_optimization.") + name + ".buffer_count", "0",
            "NVMe offload swaps through these buffers and cannot run with none (DeepSpeed's swapper allocates its "
            "buffers from this pool too)",
            std::string("use ") + (blk == &oo ? "4" : "5") + " (DeepSpeed's default)");
  }
  if (op.device.value == "nvme" && !op.buffer_size.invalid && op.buffer_size.value == 0)
    d.error("zero_optimization.offload_param.buffer_size", "0",
            "NVMe parameter offload reads each shard through a buffer of this many elements, and none fits in 0",
            "use 1e8 (DeepSpeed's default) or at least the largest unit's shard");

  // hpZ: stage 3, a group size that divides the world, parameters not on NVMe. DeepSpeed ignores
  // the key below stage 3 without a word; here that is an error, since the user asked for a
  // secondary partition the run would not have.
  const int64_t hpz = z.hpz_partition_size.value;
  if (!z.hpz_partition_size.invalid && hpz > 1) {
    const std::string v = std::to_string(hpz);
    if (stage_ok && !traits.gathers_params())
      d.error("zero_optimization.zero_hpz_partition_size", v,
              "hpZ partitions stage 3's parameters a second time, and this is stage " + std::to_string(stage) +
                  " (DeepSpeed ignores the key below stage 3 without a word)",
              "set zero_optimization.stage to 3, or remove zero_hpz_partition_size");
    if (opts.world_source != WorldSizeSource::Default && opts.world_size % hpz != 0)
      d.error("zero_optimization.zero_hpz_partition_size", v,
              "the secondary groups are " + v + " consecutive ranks each and must tile the world of " +
                  std::to_string(opts.world_size) + (opts.world_size == 1 ? " rank" : " ranks"),
              "use a divisor of the world size: the ranks per node (e.g. 8), or 1 for off");
    if (op.device.value == "nvme")
      d.error("zero_optimization.zero_hpz_partition_size", v,
              "hpZ keeps its secondary copy in device memory, beside parameters swapped to NVMe, which it cannot "
              "gather from",
              "remove zero_hpz_partition_size, or offload_param to \"cpu\" or \"none\"");
  }

  // MiCS: stage 3, a shard group that divides the world, not with hpZ (two different secondary
  // partitions of the same parameters). DeepSpeed ignores mics_shard_size below stage 3 without a
  // word; here that is an error, as for hpZ. Offloading the optimizer is a ZeRO rule (with the others).
  const int64_t mics = z.mics_shard_size.value;
  const bool mics_on = !z.mics_shard_size.invalid && mics > 0;
  if (mics_on) {
    const std::string v = std::to_string(mics);
    if (stage_ok && !traits.gathers_params())
      d.error("zero_optimization.mics_shard_size", v,
              "MiCS shards stage 3's model states over groups of ranks, and this is stage " + std::to_string(stage) +
                  " (DeepSpeed ignores the key below stage 3 without a word)",
              "set zero_optimization.stage to 3, or remove mics_shard_size (or set it to -1)");
    if (opts.world_source != WorldSizeSource::Default && opts.world_size % mics != 0)
      d.error("zero_optimization.mics_shard_size", v,
              "the shard groups are " + v + " consecutive ranks each and must tile the world of " +
                  std::to_string(opts.world_size) + (opts.world_size == 1 ? " rank" : " ranks"),
              "use a divisor of the world size (the ranks per node, e.g. 8, shards inside each node)");
    if (!z.hpz_partition_size.invalid && hpz > 1)
      d.error("zero_optimization.mics_shard_size", v,
              "MiCS and hpZ (zero_hpz_partition_size " + std::to_string(hpz) +
                  ") each keep their own partition of the parameters over a group; zerotrain runs one or the other",
              "remove zero_hpz_partition_size (MiCS with mics_shard_size = the ranks per node already keeps "
              "backward's gathers inside a node), or remove mics_shard_size");
  }
  // qwZ: stage 3's gathers; the host communicators (the CUDA path's device quantizer is not wired);
  // not with MiCS's two-level gather. Over MiCS's shard groups it runs: our extension (DeepSpeed's
  // MiCS drops hpZ, qwZ and qgZ without a word). torch_autocast, which DeepSpeed also refuses with qwZ, is
  // refused on its own (not built).
  if (z.quantized_weights.present && z.quantized_weights.value) {
    const char* key = "zero_optimization.zero_quantized_weights";
    if (stage_ok && !traits.gathers_params())
      d.error(key, "true",
              "qwZ quantizes stage 3's parameter all-gathers, and this is stage " + std::to_string(stage) +
                  " (DeepSpeed ignores the key below stage 3 without a word)",
              "set zero_optimization.stage to 3, or remove zero_quantized_weights");
    if (opts.backend == ComputeBackend::Cuda)
      d.error(key, "true", "quantized gathers run on the cpu backend only: the CUDA quantizer is not wired into the gather yet",
              "run with --backend cpu, or remove zero_quantized_weights");
    if (mics_on && z.mics_hierarchical_params_gather.value)
      d.error(key, "true", "MiCS's two-level gather (mics_hierarchical_params_gather) sends unquantized shards; the two are not combined",
              "remove mics_hierarchical_params_gather, or zero_quantized_weights");
  }
  // qgZ: stage 3's reduce-scatters (DeepSpeed asserts reduce_scatter), the host backend, not with
  // MiCS (DeepSpeed's MiCS optimizer is not handed the flag).
  if (z.quantized_gradients.present && z.quantized_gradients.value) {
    const char* key = "zero_optimization.zero_quantized_gradients";
    if (stage_ok && !traits.gathers_params())
      d.error(key, "true",
              "qgZ quantizes stage 3's gradient reduce-scatters, and this is stage " + std::to_string(stage) +
                  " (DeepSpeed ignores the key below stage 3 without a word)",
              "set zero_optimization.stage to 3, or remove zero_quantized_gradients");
    if (!z.reduce_scatter.value)
      d.error(key, "true",
              "qgZ replaces the gradient reduce-scatter, and reduce_scatter is false (DeepSpeed asserts the same)",
              "set zero_optimization.reduce_scatter to true, or remove zero_quantized_gradients");
    if (opts.backend == ComputeBackend::Cuda)
      d.error(key, "true", "quantized reductions run on the cpu backend only: the CUDA quantizer is not wired into the reducer yet",
              "run with --backend cpu, or remove zero_quantized_gradients");
    if (mics_on)
      d.error(key, "true", "MiCS reduces inside its shard groups and across replicas; qgZ's two hops are not combined with it",
              "remove mics_shard_size, or zero_quantized_gradients");
  }
  if (!mics_on && z.mics_hierarchical_params_gather.present && z.mics_hierarchical_params_gather.value)
    d.warning("zero_optimization.mics_hierarchical_params_gather", "true",
              "it shapes MiCS's parameter gather, and MiCS is off (mics_shard_size is " + std::to_string(mics) +
                  "): it has no effect",
              "set mics_shard_size to a multiple of the ranks per node, or remove the key");

  // Stage-3-only keys with stage < 3: warnings (they have no effect).
  if (stage_ok && !traits.gathers_params()) {
    struct S3 {
      bool present;
      const char* key;
    };
    for (S3 k : {S3{z.prefetch_bucket_size.present, "stage3_prefetch_bucket_size"},
                 S3{z.param_persistence_threshold.present, "stage3_param_persistence_threshold"},
                 S3{z.model_persistence_threshold.present, "stage3_model_persistence_threshold"},
                 S3{z.max_live_parameters.present, "stage3_max_live_parameters"},
                 S3{z.max_reuse_distance.present, "stage3_max_reuse_distance"},
                 S3{z.gather_16bit_weights_on_model_save.present, "stage3_gather_16bit_weights_on_model_save"}})
      if (k.present)
        d.warning(std::string("zero_optimization.") + k.key, "", "a stage-3 setting has no effect at stage " + std::to_string(stage),
                  "remove it, or set zero_optimization.stage to 3");
  }

  // aio.
  check_positive(c.aio.block_size, "aio.block_size", d);
  check_positive(c.aio.queue_depth, "aio.queue_depth", d);
  check_positive(c.aio.intra_op_parallelism, "aio.intra_op_parallelism", d);

  // Optimizer.
  auto& o = c.optimizer;
  check_range(o.lr, "optimizer.params.lr", d, 0, false, inf, true, ">= 0 and finite");
  check_range(o.weight_decay, "optimizer.params.weight_decay", d, 0, false, inf, true, ">= 0 and finite");
  if (o.type.value != "SGD") {
    check_range(o.eps, "optimizer.params.eps", d, 0, false, inf, true, ">= 0 and finite");
    if (!o.betas.invalid && !o.betas.is_auto && o.betas.value.size() == 2)
      for (int i = 0; i < 2; ++i)
        if (!(o.betas.value[i] >= 0 && o.betas.value[i] < 1))
          d.error("optimizer.params.betas[" + std::to_string(i) + "]", number_text(o.betas.value[i]), "out of range: must be in [0, 1)",
                  i == 0 ? "0.9 is usual" : "0.999 (or 0.95 for large language models) is usual");
  } else {
    check_range(o.momentum, "optimizer.params.momentum", d, 0, false, inf, true, ">= 0 and finite");
    if (o.nesterov.value && !o.momentum.invalid && !o.dampening.invalid && (o.momentum.value <= 0 || o.dampening.value != 0))
      d.error("optimizer.params.nesterov", "true",
              "Nesterov momentum needs momentum > 0 and dampening 0 (torch.optim.SGD refuses it too), and momentum is " +
                  number_text(o.momentum.value) + ", dampening " + number_text(o.dampening.value),
              "set momentum (e.g. 0.9) and dampening 0, or nesterov false");
  }

  validate_scheduler(c, d);

  // Other top-level values.
  if (!c.gradient_clipping.invalid && !std::isfinite(c.gradient_clipping.value))
    d.error("gradient_clipping", number_text(c.gradient_clipping.value), "out of range: must be finite (0 = no clipping)",
            "use 1.0 (DeepSpeed's default) or 0 to turn clipping off");
  else if (!c.gradient_clipping.invalid && c.gradient_clipping.value < 0)
    d.warning("gradient_clipping", number_text(c.gradient_clipping.value),
              "negative: DeepSpeed clips only when it is > 0, so this turns clipping off (and so it does here)",
              "write 0 to turn clipping off");
  check_range(c.gradient_predivide_factor, "gradient_predivide_factor", d, 0, true, inf, true, "> 0 and finite");
  if (!c.steps_per_print.invalid && c.steps_per_print.value && *c.steps_per_print.value < 1)
    d.error("steps_per_print", std::to_string(*c.steps_per_print.value),
            "must be at least 1 (DeepSpeed fails on it too: it divides the step count by it)",
            "use a positive number, or null for no periodic report");

  // activation_checkpointing that changes nothing.
  auto& a = c.activation_checkpointing;
  if (a.present && !a.partition_activations.value && !a.cpu_checkpointing.value && !a.contiguous_memory_optimization.value &&
      !a.number_checkpoints.value.has_value())
    d.warning("activation_checkpointing", "", "the block has no effect: it enables none of partition_activations, cpu_checkpointing, "
                                              "contiguous_memory_optimization or number_checkpoints",
              "remove the block, or enable one of those keys");
}

}  // namespace zt
