// The rules an option set must satisfy for the ZeRO objects to run it on a backend, each written
// once: config validation (runtime/config/validate_engine.cpp) turns every problem into its config
// key, value and fix; the engine refuses the same problems before it builds anything, so a config
// that validated never reaches that refusal. Header-only (base/ types and zero_options.h): the
// config layer includes it without linking the ZeRO objects.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/offload.h"
#include "base/optimizer.h"
#include "base/stage_traits.h"
#include "runtime/zero/zero_options.h"

namespace zt {

// What a backend can run, as the rules need it (not its name).
struct BackendCaps {
  DType compute = DType::F32;  // the type its buffers hold and its kernels compute in
  // Its memory is host memory the host optimizers address in place (the CPU backend); otherwise a
  // device whose own optimizer step is the multi-tensor Adam/AdamW only.
  bool host_memory = true;
  // Communication and gradient accumulation in another precision than `compute` (the CPU backend
  // emulates them by rounding); otherwise only in `compute`.
  bool other_precisions = true;
  static BackendCaps cpu() { return {DType::F32, true, true}; }
  static BackendCaps cuda() { return {DType::BF16, false, false}; }
};

// The options the rules read: the run's ZeRO choices, its optimizer, and (when the model is known)
// whether the NVMe parameter records fit their buffers.
struct ZeroOptionSet : ZeroOptions {
  OptimizerType optimizer = OptimizerType::AdamW;
  int64_t param_buffer_size = 0;     // offload_param.buffer_size (elements)
  int64_t largest_param_shard = 0;   // the largest per-rank parameter shard; 0: not known (no model)
};

enum class ZeroRule {
  ComputePrecision,        // the backend computes only in its own type
  CommPrecision,           // communication_data_type the backend cannot use
  AccumPrecision,          // data_types.grad_accum_dtype the backend cannot use
  ParamOffloadNeedsHostOptimizer,  // a device backend writes an offloaded parameter shard from the host optimizer
  PartialOffloadNeedsStage3Cpu,    // offload_optimizer.ratio < 1 outside stage 3 + cpu
  PartialOffloadNeedsAdam,         // ratio < 1 keeps state in device memory, where only Adam/AdamW run
  LambOnNvme,                      // Lamb needs every tensor's state at once
  ParamBufferTooSmall,             // an NVMe parameter record larger than offload_param.buffer_size
  MicsWithOptimizerOffload,        // MiCS's replica all-reduce with the optimizer offloaded (DeepSpeed refuses it)
  CompressedNeedsStage0,           // 1-bit and 0/1 Adam keep the full state of stage 0 (DeepSpeed asserts no ZeRO)
  CompressedNeedsHostBackend,      // their compressed all-reduce runs on host buffers only (not built for NCCL)
};

// The host optimizer steps every shard: a host backend, or offload "cpu" / "nvme" with ratio 1, or
// an optimizer the device backend cannot step itself.
inline bool host_optimizer_steps_every_shard(const ZeroOptionSet& o, const BackendCaps& b) {
  if (b.host_memory) return true;
  return !is_adam(o.optimizer) || (o.offload_optimizer != OffloadDevice::None && o.offload_ratio >= 1.0);
}

// Every rule the option set breaks on this backend, in the order of the enum.
inline std::vector<ZeroRule> check_zero_options(const ZeroOptionSet& o, const BackendCaps& b) {
  std::vector<ZeroRule> broken;
  const StageTraits t = stage_traits(o.stage);
  if (b.compute != DType::F32 && o.precision != b.compute) broken.push_back(ZeroRule::ComputePrecision);
  if (!b.other_precisions && o.comm_precision.value_or(b.compute) != b.compute) broken.push_back(ZeroRule::CommPrecision);
  if (!b.other_precisions && o.grad_accum_precision.value_or(b.compute) != b.compute)
    broken.push_back(ZeroRule::AccumPrecision);
  if (t.gathers_params() && o.offload_param != OffloadDevice::None && !host_optimizer_steps_every_shard(o, b))
    broken.push_back(ZeroRule::ParamOffloadNeedsHostOptimizer);
  if (o.offload_ratio < 1.0) {
    if (!t.gathers_params() || o.offload_optimizer != OffloadDevice::CPU) broken.push_back(ZeroRule::PartialOffloadNeedsStage3Cpu);
    else if (!is_adam(o.optimizer)) broken.push_back(ZeroRule::PartialOffloadNeedsAdam);
  }
  if (o.offload_optimizer == OffloadDevice::NVMe && o.optimizer == OptimizerType::Lamb) broken.push_back(ZeroRule::LambOnNvme);
  if (t.gathers_params() && o.offload_param == OffloadDevice::NVMe && o.largest_param_shard > 0 &&
      o.param_buffer_size < o.largest_param_shard)
    broken.push_back(ZeroRule::ParamBufferTooSmall);
  if (t.gathers_params() && o.mics_shard_size > 0 && o.offload_optimizer != OffloadDevice::None)
    broken.push_back(ZeroRule::MicsWithOptimizerOffload);
  if (is_compressed(o.optimizer)) {
    if (!t.all_reduces_grads() || o.offload_optimizer != OffloadDevice::None || o.offload_param != OffloadDevice::None)
      broken.push_back(ZeroRule::CompressedNeedsStage0);
    if (!b.host_memory) broken.push_back(ZeroRule::CompressedNeedsHostBackend);
  }
  return broken;
}

// One line for the engine's refusal (config validation words each rule with its key instead).
inline std::string describe(ZeroRule r, const ZeroOptionSet& o) {
  switch (r) {
    case ZeroRule::ComputePrecision:
      return std::string("the backend computes in its own type only; the options train in ") + dtype_name(o.precision);
    case ZeroRule::CommPrecision:
      return std::string("the backend communicates gradients in its own type only; communication_data_type is ") +
             dtype_name(*o.comm_precision);
    case ZeroRule::AccumPrecision:
      return std::string("the backend accumulates gradients in its own type only; grad_accum_dtype is ") +
             dtype_name(*o.grad_accum_precision);
    case ZeroRule::ParamOffloadNeedsHostOptimizer:
      return "offload_param on a device backend needs every shard's optimizer step on the host (it writes the new "
             "shard there)";
    case ZeroRule::PartialOffloadNeedsStage3Cpu:
      return "offload_optimizer.ratio = " + std::to_string(o.offload_ratio) + " needs stage 3 and offload_optimizer.device "
             "\"cpu\" (stage is " + std::to_string(o.stage) + ", device " + offload_name(o.offload_optimizer) + ")";
    case ZeroRule::PartialOffloadNeedsAdam:
      return std::string("offload_optimizer.ratio < 1 keeps part of the optimizer in device memory, where only "
                         "Adam/AdamW run; the optimizer is ") + optimizer_type_name(o.optimizer);
    case ZeroRule::LambOnNvme:
      return "Lamb needs every tensor's state at once; it cannot page it to NVMe";
    case ZeroRule::ParamBufferTooSmall:
      return "offload_param.buffer_size = " + std::to_string(o.param_buffer_size) +
             " elements cannot hold the largest parameter shard of " + std::to_string(o.largest_param_shard) +
             " elements: raise zero_optimization.offload_param.buffer_size to at least " +
             std::to_string(o.largest_param_shard);
    case ZeroRule::MicsWithOptimizerOffload:
      return "mics_shard_size " + std::to_string(o.mics_shard_size) + " with offload_optimizer.device " +
             offload_name(o.offload_optimizer) + ": MiCS is not built with an offloaded optimizer";
    case ZeroRule::CompressedNeedsStage0:
      return std::string(optimizer_type_name(o.optimizer)) + " runs with ZeRO stage 0 and no offload (stage " +
             std::to_string(o.stage) + ", offload_optimizer " +
             offload_name(o.offload_optimizer) + ", offload_param " + offload_name(o.offload_param) +
             "): it keeps every parameter's state on every rank, as DeepSpeed's";
    case ZeroRule::CompressedNeedsHostBackend:
      return std::string(optimizer_type_name(o.optimizer)) +
             "'s compressed all-reduce runs on host buffers only; on a device backend it is not built";
  }
  return "?";
}

}  // namespace zt
