// What the engine can run: the checks that depend on the backend the run computes on, the optimizer
// and the model, made here so that every problem is reported at once with its key, before the engine
// starts (the engine's own checks stay as a backstop and are never reached from a validated config).
#include <algorithm>
#include <cmath>
#include <sstream>

#include "base/stage_traits.h"
#include "runtime/config/config_load.h"
#include "runtime/config/config_walk.h"

namespace zt {
namespace {


// The element count of the largest per-rank shard of any unit at stage 3 (the engine pads each unit
// to world size × 16 elements and splits it evenly).
int64_t largest_stage3_shard(const ModelConfig& m, int world) {
  const int64_t quantum = int64_t(world) * 16;
  int64_t largest = std::max({m.embedding_params(), m.block_params(), m.head_params()});
  const int64_t padded = std::max(quantum, (largest + quantum - 1) / quantum * quantum);
  return padded / world;
}

bool depends_on_optimizer(ZeroRule r) {
  return r == ZeroRule::ParamOffloadNeedsHostOptimizer || r == ZeroRule::PartialOffloadNeedsAdam ||
         r == ZeroRule::LambOnNvme || r == ZeroRule::CompressedNeedsStage0 || r == ZeroRule::CompressedNeedsHostBackend;
}

BackendCaps caps_of(ComputeBackend b) { return b == ComputeBackend::Cuda ? BackendCaps::cuda() : BackendCaps::cpu(); }

// Each broken rule (runtime/zero/zero_rules.h) with its config key, value and fix.
void report(ZeroRule rule, const Config& c, const ZeroOptionSet& zs, Diagnostics& d) {
  const auto& z = c.zero_optimization;
  const auto& oo = z.offload_optimizer;
  const auto& op = z.offload_param;
  switch (rule) {
    case ZeroRule::ComputePrecision: {
      const bool fp16 = c.fp16_enabled();
      d.error(fp16 ? "fp16.enabled" : c.bf16.spelling + ".enabled", fp16 ? "true" : "false",
              std::string("the cuda backend computes in bf16 and the config trains in ") + (fp16 ? "fp16" : "fp32"),
              "set \"" + c.bf16.spelling + "\": {\"enabled\": true} (or \"auto\" with --bf16)" +
                  (fp16 ? " and turn fp16 off" : "") + ", or train fp32/fp16 with --backend cpu");
      return;
    }
    case ZeroRule::CommPrecision:
    case ZeroRule::AccumPrecision: {
      const bool comm = rule == ZeroRule::CommPrecision;
      d.error(comm ? "communication_data_type" : "data_types.grad_accum_dtype",
              quoted_text(comm ? c.communication_data_type.value : c.data_types.grad_accum_dtype.value),
              "the cuda backend reduces and accumulates gradients in bf16 only",
              "remove it or set it to \"bf16\", or run on --backend cpu (which emulates fp32 and fp16)");
      return;
    }
    case ZeroRule::ParamOffloadNeedsHostOptimizer:
      d.error("zero_optimization.offload_param.device", quoted_text(op.device.value),
              "on the cuda backend parameter offload needs every shard's optimizer step on the host (it writes the new "
              "shard there), and " +
                  (oo.device.value == "none" ? std::string("offload_optimizer.device is \"none\"")
                                             : "offload_optimizer.ratio is " + number_text(oo.ratio.value)),
              "set offload_optimizer.device to \"cpu\" or \"nvme\" with ratio 1, or offload_param.device to \"none\"");
      return;
    case ZeroRule::PartialOffloadNeedsStage3Cpu: {
      const int64_t stage = z.stage.value;
      if (!z.stage.invalid && is_zero_stage(stage) && !stage_traits(int(stage)).gathers_params())  // an impossible stage has its own error
        d.error("zero_optimization.offload_optimizer.ratio", number_text(oo.ratio.value),
                "partial optimizer offload (ratio < 1) works only with ZeRO stage 3, and stage is " + std::to_string(stage),
                "set zero_optimization.stage to 3, or remove ratio (offload everything)");
      if (zs.offload_optimizer == OffloadDevice::NVMe)
        d.error("zero_optimization.offload_optimizer.ratio", number_text(oo.ratio.value),
                "partial optimizer offload (ratio < 1) works with offload_optimizer.device \"cpu\" only, and device is "
                "\"nvme\"",
                "set device to \"cpu\", or remove ratio (page all optimizer state to NVMe)");
      return;
    }
    case ZeroRule::PartialOffloadNeedsAdam:
      d.error("zero_optimization.offload_optimizer.ratio", number_text(oo.ratio.value),
              "partial optimizer offload keeps part of the optimizer in device memory, where only Adam/AdamW run, and "
              "the optimizer is " + c.optimizer.type.value,
              "remove ratio (offload everything), or use Adam/AdamW");
      return;
    case ZeroRule::LambOnNvme:
      d.error("optimizer.type", quoted_text(c.optimizer.type.value),
              "Lamb needs every tensor's state at once for its trust ratio, so its state cannot be paged to NVMe",
              "use offload_optimizer.device \"cpu\", or Adam/AdamW");
      return;
    case ZeroRule::MicsWithOptimizerOffload:
      d.error("zero_optimization.mics_shard_size", std::to_string(z.mics_shard_size.value),
              "MiCS is not built with an offloaded optimizer (offload_optimizer.device " + quoted_text(oo.device.value) +
                  "): its replica all-reduce runs on the gradient shards in backend memory, which an offloaded "
                  "optimizer moves to the host first; DeepSpeed's MiCS raises for the pair too",
              "remove offload_optimizer, or remove mics_shard_size (plain stage 3 offloads)");
      return;
    case ZeroRule::CompressedNeedsStage0: {
      const bool staged = z.stage.value != 0;
      const std::string key = staged ? "zero_optimization.stage"
                              : oo.device.value != "none" ? "zero_optimization.offload_optimizer.device"
                                                          : "zero_optimization.offload_param.device";
      const std::string value = staged ? std::to_string(z.stage.value)
                                : quoted_text(oo.device.value != "none" ? oo.device.value : op.device.value);
      d.error(key, value,
              c.optimizer.type.value + " keeps every parameter's optimizer state on every rank (ZeRO stage 0, no offload); "
              "DeepSpeed refuses ZeRO with it too (\"1bit-Adam is not compatible with ZeRO\")",
              staged ? "set zero_optimization.stage to 0, or use Adam/AdamW with ZeRO" : "remove the offload block");
      return;
    }
    case ZeroRule::CompressedNeedsHostBackend:
      d.error("optimizer.type", quoted_text(c.optimizer.type.value),
              "on the cuda backend " + c.optimizer.type.value + "'s compressed all-reduce (signs packed on the device) is not built yet",
              "run it with --backend cpu, or use Adam/AdamW on cuda");
      return;
    case ZeroRule::ParamBufferTooSmall:
      return;  // reported below with the model's name and the world size
  }
  (void)zs;
}

}  // namespace

std::optional<OptimizerType> optimizer_type_of(const OptimizerConfig& o) {
  const std::string& type = o.type.value;
  if (type == "AdamW") return OptimizerType::AdamW;
  if (type == "Adam") return o.adam_w_mode.value ? OptimizerType::AdamW : OptimizerType::AdamL2;
  if (type == "SGD") return OptimizerType::SGD;
  if (type == "Lamb") return OptimizerType::Lamb;
  if (type == "OneBitAdam") return OptimizerType::OneBitAdam;
  if (type == "ZeroOneAdam") return OptimizerType::ZeroOneAdam;
  if (type == "OneBitLamb") return OptimizerType::OneBitLamb;
  return std::nullopt;
}

ZeroOptionSet zero_option_set(const Config& c) {
  const auto& z = c.zero_optimization;
  const auto& oo = z.offload_optimizer;
  ZeroOptionSet o;
  o.stage = int(z.stage.value);
  o.precision = c.training_precision();
  if (!c.communication_data_type.value.empty()) o.comm_precision = precision_named(c.communication_data_type.value);
  if (!c.data_types.grad_accum_dtype.value.empty()) o.grad_accum_precision = precision_named(c.data_types.grad_accum_dtype.value);
  o.optimizer = optimizer_type_of(c.optimizer).value_or(OptimizerType::AdamW);
  o.offload_optimizer = offload_device_named(oo.device.value);
  // The ratio of an offloading device (a ratio outside [0, 1] is a config-shape error of its own);
  // the rules refuse it below 1 on anything but stage 3 + "cpu".
  if (o.offload_optimizer != OffloadDevice::None && !oo.ratio.invalid && oo.ratio.value >= 0 && oo.ratio.value <= 1)
    o.offload_ratio = oo.ratio.value;
  if (o.offload_optimizer == OffloadDevice::CPU && o.offload_ratio == 0.0) {  // DeepSpeed: nothing offloaded
    o.offload_optimizer = OffloadDevice::None;
    o.offload_ratio = 1.0;
  }
  o.offload_param = offload_device_named(z.offload_param.device.value);
  o.param_buffer_size = z.offload_param.buffer_size.value;
  // MiCS only at stage 3 (below it the key is an error of its own); <= 0 is DeepSpeed's off.
  if (stage_traits(o.stage).gathers_params() && !z.mics_shard_size.invalid && z.mics_shard_size.value > 0)
    o.mics_shard_size = int(std::min<int64_t>(z.mics_shard_size.value, INT32_MAX));
  return o;
}

const char* compute_backend_name(ComputeBackend b) { return b == ComputeBackend::Cuda ? "cuda" : "cpu"; }

void validate_for_engine(const Config& c, const LoadOptions& opts, Diagnostics& d) {
  const auto& z = c.zero_optimization;
  const auto& op = z.offload_param;
  const auto& o = c.optimizer;
  // The ZeRO objects' rules, written once in runtime/zero/zero_rules.h (the engine checks the same).
  {
    ZeroOptionSet zs = zero_option_set(c);
    if (opts.model && stage_traits(zs.stage).gathers_params()) zs.largest_param_shard = largest_stage3_shard(*opts.model, std::max(1, opts.world_size));
    // With an optimizer type zerotrain does not know (its own error), the rules that depend on the
    // optimizer would be read against a stand-in: only the others are reported.
    const bool known_optimizer = optimizer_type_of(o).has_value();
    for (ZeroRule rule : check_zero_options(zs, caps_of(opts.backend)))
      if (known_optimizer || !depends_on_optimizer(rule)) report(rule, c, zs, d);
  }

  // Optimizer features zerotrain's optimizers do not have.
  const std::optional<OptimizerType> type = optimizer_type_of(o);
  const bool compressed = type && is_compressed(*type);
  if (o.amsgrad.value)
    d.error("optimizer.params.amsgrad", "true",
            compressed          ? o.type.value + " has no AMSGrad variant (DeepSpeed raises the same)"
            : o.torch_adam.value ? "AMSGrad is not implemented in zerotrain (DeepSpeed's torch_adam path has it)"
                                 : "AMSGrad is not implemented (DeepSpeed refuses it too: FusedAdam does not support "
                                   "the AMSGrad variant)",
            "remove amsgrad or set it to false");
  if (compressed && !c.fp16_enabled())
    d.warning("optimizer.type", quoted_text(o.type.value),
              o.type.value + "'s convergence is verified under fp16 only (DeepSpeed gives the same warning); "
                             "this run trains in " + dtype_name(c.training_precision()),
              "nothing to do; enable fp16 to train as DeepSpeed's results with it were obtained");
  if (type == OptimizerType::OneBitLamb && c.fp16_enabled() && c.fp16.loss_scale.value != 0)
    d.error("fp16.loss_scale", number_text(c.fp16.loss_scale.value),
            "1-bit LAMB needs dynamic loss scaling under fp16 (DeepSpeed asserts it: a static scale is not supported "
            "with its compressed phase)",
            "set fp16.loss_scale to 0 (dynamic), or train in bf16 or fp32");
  if (type == OptimizerType::ZeroOneAdam) {
    if (o.local_step_clipper.value < 1)
      d.error("optimizer.params.local_step_clipper", std::to_string(o.local_step_clipper.value),
              "the local step interval would become " + std::to_string(o.local_step_clipper.value) +
                  " (DeepSpeed's 0/1 Adam divides the step number by it)",
              "use a positive interval (DeepSpeed's default is 16)");
    for (const auto& [k, f] : {std::pair{"var_update_scaler", &o.var_update_scaler}, std::pair{"local_step_scaler", &o.local_step_scaler}})
      if (f->value < 1)
        d.warning(std::string("optimizer.params.") + k, std::to_string(f->value),
                  "DeepSpeed's counter never reaches it, so its interval never doubles (and so it is here)",
                  "nothing to do if that is meant; a positive count doubles the interval after that many steps");
  }
  if (c.fp16.fp16_master_weights_and_grads.value)
    d.error("fp16.fp16_master_weights_and_grads", "true",
            "fp16 master weights and gradients are not implemented: zerotrain keeps fp32 master weights",
            "remove it or set it to false");
  if (!z.reduce_scatter.value && z.stage.value >= 1)
    d.warning("zero_optimization.reduce_scatter", "false",
              "DeepSpeed would all-reduce the gradients and keep its partition; zerotrain reduce-scatters them anyway "
              "(the same sums in half the volume)",
              "remove it (true is the default)");

  // Model-dependent: the NVMe parameter buffers must hold the largest shard.
  if (opts.model && z.stage.value == 3 && op.device.value == "nvme" && !op.buffer_size.invalid && op.buffer_size.value > 0) {
    const int64_t need = largest_stage3_shard(*opts.model, std::max(1, opts.world_size));
    if (op.buffer_size.value < need)
      d.error("zero_optimization.offload_param.buffer_size", std::to_string(op.buffer_size.value),
              "too small: each unit's parameter shard is read through one buffer, and the largest shard of " +
                  opts.model->name + " at world size " + std::to_string(opts.world_size) + " has " +
                  std::to_string(need) + " elements",
              "raise buffer_size to at least " + std::to_string(need) + " (DeepSpeed's default is 1e8)");
  }
}

}  // namespace zt
