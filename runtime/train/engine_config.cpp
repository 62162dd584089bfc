// engine_options_from_config: the mapping from DeepSpeed's keys to the engine's options.
#include "runtime/train/engine_config.h"

#include "base/stage_traits.h"
#include "runtime/config/zero_sizes.h"

#include <algorithm>
#include <stdexcept>

namespace zt {

namespace {

template <class T>
bool given(const Field<T>& f) {
  return f.source.kind != SourceKind::Default;
}

OptimizerOptions optimizer_options(const OptimizerConfig& o) {
  OptimizerOptions r;
  const std::optional<OptimizerType> type = optimizer_type_of(o);
  if (!type) throw std::logic_error("engine_options_from_config: optimizer.type \"" + o.type.value + "\" passed validation");
  r.type = *type;
  r.lr = o.lr.value;
  if (o.betas.value.size() == 2) {
    r.beta1 = o.betas.value[0];
    r.beta2 = o.betas.value[1];
  }
  r.eps = o.eps.value;
  r.weight_decay = o.weight_decay.value;
  r.bias_correction = o.bias_correction.value;
  r.momentum = o.momentum.value;
  r.dampening = o.dampening.value;
  r.nesterov = o.nesterov.value;
  r.max_coeff = o.max_coeff.value;
  r.min_coeff = o.min_coeff.value;
  r.freeze_step = o.freeze_step.value;
  r.coeff_beta = o.coeff_beta.value;
  r.factor_max = o.factor_max.value;
  r.factor_min = o.factor_min.value;
  r.factor_threshold = o.factor_threshold.value;
  r.var_freeze_step = o.var_freeze_step.value;
  r.var_update_scaler = o.var_update_scaler.value;
  r.local_step_scaler = o.local_step_scaler.value;
  r.local_step_clipper = o.local_step_clipper.value;
  return r;
}

// Only the keys the file (or a flag) set, and only those the scheduler type reads, so that
// DeepSpeed's per-type defaults apply.
SchedulerParams scheduler_params(const SchedulerConfig& s) {
  SchedulerParams p;
  const std::string& t = s.type.value;
  auto num = [&](const char* k, const auto& f) {
    if (given(f)) p.numbers[k] = double(f.value);
  };
  num("warmup_num_steps", s.warmup_num_steps);
  if (given(s.warmup_type)) p.strings["warmup_type"] = s.warmup_type.value;
  if (t == "WarmupLR" || t == "WarmupDecayLR") {
    num("warmup_min_lr", s.warmup_min_lr);
    num("warmup_max_lr", s.warmup_max_lr);
  }
  if (t == "WarmupDecayLR" || t == "WarmupCosineLR") num("total_num_steps", s.total_num_steps);
  if (t == "WarmupCosineLR") {
    num("warmup_min_ratio", s.warmup_min_ratio);
    num("cos_min_ratio", s.cos_min_ratio);
  }
  if (t == "OneCycle") {  // none of the warmup keys: start again from the OneCycle ones
    p = SchedulerParams{};
    num("cycle_min_lr", s.cycle_min_lr);
    num("cycle_max_lr", s.cycle_max_lr);
    num("decay_lr_rate", s.decay_lr_rate);
    num("cycle_first_step_size", s.cycle_first_step_size);
    num("cycle_second_step_size", s.cycle_second_step_size);
    num("cycle_first_stair_count", s.cycle_first_stair_count);
    num("cycle_second_stair_count", s.cycle_second_stair_count);
    num("decay_step_size", s.decay_step_size);
    num("cycle_momentum", s.cycle_momentum);  // booleans travel as 0 / 1
    num("cycle_min_mom", s.cycle_min_mom);
    num("cycle_max_mom", s.cycle_max_mom);
    num("decay_mom_rate", s.decay_mom_rate);
  }
  return p;
}

offload::AioConfig aio_config(const AioConfig& a) {
  offload::AioConfig r;
  r.block_size = size_t(a.block_size.value);
  r.queue_depth = int(a.queue_depth.value);
  r.intra_op_parallelism = int(a.intra_op_parallelism.value);
  r.single_submit = a.single_submit.value;
  r.overlap_events = a.overlap_events.value;
  return r;
}

LossScalerConfig loss_scaler_config(const Fp16Config& f, int stage) {
  LossScalerConfig r;
  r.loss_scale = f.loss_scale.value;
  r.initial_scale_power = int(f.initial_scale_power.value);
  r.loss_scale_window = f.loss_scale_window.value;
  r.hysteresis = int(f.hysteresis.value);
  r.consecutive_hysteresis = f.consecutive_hysteresis.value;
  r.min_loss_scale = double(f.min_loss_scale.value);
  // DeepSpeed's stage 0 runs FP16_Optimizer (no hysteresis); its ZeRO optimizers DynamicLossScaler.
  r.kind = stage_traits(int(stage)).all_reduces_grads() ? LossScalerKind::Fp16Optimizer : LossScalerKind::ZeroOptimizer;
  return r;
}

}  // namespace

EngineOptions engine_options_from_config(const Config& c, uint64_t seed, bool recompute, const ModelConfig* model) {
  EngineOptions e;
  const auto& z = c.zero_optimization;
  const ZeroSizes sizes = zero_sizes(z, c.world_size.value, model);
  e.micro_batch = int(c.train_micro_batch_size_per_gpu.value);
  e.grad_accum = int(c.gradient_accumulation_steps.value);
  e.zero = zero_option_set(c);  // the ZeRO choices as validation read them ("ratio 0" offloads nothing)
  e.reduce = ReduceOptions{sizes.reduce_bucket, z.overlap_comm.value};
  const StageTraits traits = stage_traits(e.zero.stage);
  e.reduce.quantized_gradients = traits.gathers_params() && z.quantized_gradients.value;
  e.gather.overlap = z.overlap_comm.value;
  e.gather.prefetch_bucket_size = z.prefetch_bucket_size.value;
  e.gather.persistence_threshold = z.param_persistence_threshold.value;
  e.gather.max_live_parameters = z.max_live_parameters.value;
  e.gather.max_reuse_distance = z.max_reuse_distance.value;
  e.gather.hpz_partition_size = std::max<int64_t>(1, z.hpz_partition_size.value);
  e.gather.mics_hierarchical = e.zero.mics_shard_size > 0 && z.mics_hierarchical_params_gather.value;
  e.gather.quantized_weights = traits.gathers_params() && z.quantized_weights.value;
  e.gather.allgather_bucket_size = sizes.allgather_bucket;
  e.optimizer = optimizer_options(c.optimizer);
  if (!c.scheduler.type.value.empty())
    e.update.scheduler = make_lr_scheduler(c.scheduler.type.value, scheduler_params(c.scheduler), e.optimizer.lr);
  e.update.gradient_clipping = std::max(0.0, c.gradient_clipping.value);  // DeepSpeed clips only when > 0
  e.update.loss_scaler = loss_scaler_config(c.fp16, e.zero.stage);
  e.sub_group_size = sizes.sub_group;
  e.prescale_gradients = c.prescale_gradients.value;
  e.gradient_predivide_factor = c.gradient_predivide_factor.value;
  const auto& op = z.offload_param;
  e.offload.params =
      ParamOffloadOptions{op.nvme_path.value, int(op.buffer_count.value), op.buffer_size.value, aio_config(c.aio)};
  const auto& oo = z.offload_optimizer;
  e.offload.state = StateOffloadOptions{oo.nvme_path.value, int(oo.buffer_count.value), aio_config(c.aio)};
  e.offload.pin_memory = oo.pin_memory.value;
  e.checkpoint_activations = recompute;
  e.seed = seed;
  return e;
}

}  // namespace zt
