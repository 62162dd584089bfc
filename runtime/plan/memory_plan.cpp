// make_memory_plan: the ZeRO per-rank byte table, offload placement, activation and buffer
// estimates, and DeepSpeed's estimator numbers for the same input (formulas in memory_plan.h).
#include "runtime/plan/memory_plan.h"

#include <algorithm>

#include "runtime/plan/deepspeed_estimate.h"
#include "base/stage_traits.h"

namespace zt {

std::string optimizer_name(const PlanInput& in) {
  if (!in.optimizer) return "none";
  if (*in.optimizer == OptimizerType::SGD && in.sgd_momentum) return "SGD+momentum";
  return optimizer_type_name(*in.optimizer);
}

namespace {

int state_bytes(const PlanInput& in) {
  return in.optimizer ? 4 * optimizer_state_arrays(*in.optimizer, in.sgd_momentum) : 0;  // fp32 arrays
}

double min_elems(int64_t a, double psi) { return std::min(double(std::max<int64_t>(a, 0)), psi); }

// Largest single module's parameters in a GPT-2 model, as DeepSpeed's model_to_params counts them
// (per module, not recursive): the token embedding V·h or an MLP matrix 4h·h + 4h.
int64_t gpt2_largest_layer(const PlanInput& in) {
  if (in.hidden <= 0) return 0;
  const int64_t h = in.hidden;
  return std::max<int64_t>(in.vocab * h, 4 * h * h + 4 * h);
}

// The engine's largest unit (its unit of gathering and reducing): the embedding (V·h + T·h) or one
// block (12h² + 13h).
int64_t gpt2_largest_unit(const PlanInput& in) {
  if (in.hidden <= 0) return 0;
  const int64_t h = in.hidden;
  return std::max<int64_t>(in.vocab * h + in.seq_len * h, 12 * h * h + 13 * h);
}

}  // namespace

// The compressed optimizers' bytes per rank without a model (padding left out): the error
// feedback 4Ψ(1 + 1/N) at N > 1, 0/1 Adam's synced point and 1-bit LAMB's flat momentum 4Ψ; in a checkpoint, 0/1 Adam's
// largest per-rank arrays instead of the synced point alone (its own master, momentum and synced
// point, 12Ψ, and lrs).
static uint64_t compressed_bytes_estimate(const PlanInput& in, bool checkpoint) {
  if (!in.optimizer || !is_compressed(*in.optimizer)) return 0;
  const uint64_t psi = uint64_t(std::max<int64_t>(in.params, 0)), n = uint64_t(std::max(1, in.world_size));
  uint64_t b = n > 1 ? 4 * psi + 4 * psi / n : 0;
  if (in.optimizer == OptimizerType::ZeroOneAdam) b += checkpoint ? 12 * psi + 8 : 4 * psi;
  if (in.optimizer == OptimizerType::OneBitLamb && !checkpoint) b += 4 * psi;  // its flat momentum buffer
  return b;
}

int plan_state_shards(const PlanInput& in) {
  const int n = std::max(1, in.world_size);
  return stage_traits(in.stage).gathers_params() && in.mics_shard_size > 0 ? std::min(in.mics_shard_size, n) : n;
}

uint64_t checkpoint_snapshot_estimate(const PlanInput& in) {
  const uint64_t per_param = uint64_t(4 + state_bytes(in)), shards = uint64_t(plan_state_shards(in));
  const uint64_t psi = uint64_t(std::max<int64_t>(in.params, 0));
  // A compressed optimizer's arrays of each rank alone, in its file too.
  return (psi * per_param + shards - 1) / shards + compressed_bytes_estimate(in, true);
}

MemoryPlan make_memory_plan(const PlanInput& in) {
  MemoryPlan p;
  p.input = in;
  const double psi = double(std::max<int64_t>(in.params, 0));
  const int n = std::max(1, in.world_size);
  const bool mixed = in.precision != DType::F32;
  const int w = plan_working_bytes(in);
  p.working_bytes = w;
  p.state_k = state_bytes(in);
  p.master_k = (mixed && in.optimizer.has_value()) ? 4 : 0;
  p.optimizer_k = p.master_k + p.state_k;
  p.ranks_on_node = std::min(std::max(1, in.ranks_per_node), n);

  const StageTraits traits = stage_traits(in.stage);
  const int shards = plan_state_shards(in);
  const double opt_div = traits.optimizer_divisor(shards);  // optimizer partition (stage 1+)
  const double grad_div = traits.grad_divisor(shards);
  const double param_div = traits.param_divisor(shards);

  p.device_params = w * psi / param_div;
  p.device_grads = w * psi / grad_div;
  p.device_optimizer = p.optimizer_k * psi / opt_div;
  p.device_optimizer += double(in.optimizer_extra_bytes ? *in.optimizer_extra_bytes : compressed_bytes_estimate(in, false));

  // Optimizer offload: fraction r of the optimizer partition (with its fp32 master and fp32 grads).
  const bool has_opt = in.optimizer.has_value();
  if (in.offload_optimizer != OffloadDevice::None && has_opt) {
    const double r = std::clamp(in.offload_optimizer_ratio, 0.0, 1.0);
    const double shard = psi / opt_div;
    p.device_optimizer = (1 - r) * p.optimizer_k * shard;
    const double grads_fp32 = r * 4 * shard;
    const double master_and_state = r * (4 + p.state_k) * shard;
    if (in.offload_optimizer == OffloadDevice::CPU) {
      p.host_bytes_per_rank += master_and_state + grads_fp32;
    } else {
      p.nvme_bytes_per_rank += master_and_state;
      p.host_bytes_per_rank += grads_fp32 + in.optimizer_buffer_count * min_elems(in.sub_group_size, shard) * 4;
    }
  }
  // Parameter offload: stage 3 only (DeepSpeed ignores it below stage 3; the config rejects it).
  if (in.offload_param != OffloadDevice::None && traits.gathers_params()) {
    const double shard = w * psi / shards;
    p.device_params = 0;
    if (in.offload_param == OffloadDevice::CPU) {
      p.host_bytes_per_rank += shard;
    } else {
      p.nvme_bytes_per_rank += shard;
      p.host_bytes_per_rank += in.param_buffer_count * min_elems(in.param_buffer_size, psi) * w;
    }
  }

  if (traits.gathers_params() && n > 1 && in.hpz_partition_size > 1) p.device_params += w * psi / in.hpz_partition_size;

  p.device_activations = in.activation_bytes.value_or(0.0);

  if (in.unit_buffer_bytes) {
    p.device_buffers = *in.unit_buffer_bytes;  // what the engine's buffer pool holds
  } else {
    // No model: the bucket sizes bound the buffers, but at least three of the largest unit (the
    // engine reduces whole units: two in flight and a tied head's embedding gradient).
    double buffers = std::max(min_elems(in.reduce_bucket_size, psi), 3.0 * double(gpt2_largest_unit(in))) * w;
    if (traits.gathers_updated_shards()) buffers += min_elems(in.allgather_bucket_size, psi) * w;
    if (traits.gathers_params()) {
      buffers += std::max(min_elems(in.stage3_max_live_parameters, psi),
                          min_elems(in.stage3_prefetch_bucket_size, psi)) * w;
    }
    p.device_buffers = buffers;
  }
  p.comm_buffers = double(in.comm_buffer_bytes);
  p.comm_device_buffers = double(in.comm_device_bytes);
  p.device_buffers += p.comm_device_buffers;
  if (in.backend_is_host) {
    p.device_buffers += p.comm_buffers;
  } else {
    p.host_bytes_per_rank += p.comm_buffers;
  }
  // The snapshot per node: each owning rank's; under MiCS only the first shard group owns the state.
  p.checkpoint_snapshot = double(in.checkpoint_snapshot_bytes);
  p.snapshot_owners_on_node = traits.gathers_params() && in.mics_shard_size > 0 ? std::min(plan_state_shards(in), p.ranks_on_node)
                                                                       : p.ranks_on_node;
  p.host_bytes_per_node = p.host_bytes_per_rank * p.ranks_on_node + p.checkpoint_snapshot * p.snapshot_owners_on_node;
  p.host_bytes_per_rank += p.checkpoint_snapshot;
  p.nvme_bytes_per_node = p.nvme_bytes_per_rank * p.ranks_on_node;

  // DeepSpeed's estimate: GPUs per node and nodes from the same launch shape.
  const int gpus_per_node = p.ranks_on_node;
  const int nodes = (n + gpus_per_node - 1) / gpus_per_node;
  const bool opt_off = in.offload_optimizer != OffloadDevice::None;
  const bool param_off = in.offload_param != OffloadDevice::None;
  DsEstimate ds;
  if (!traits.gathers_params()) {
    p.ds_estimator = "estimate_zero2_model_states_mem_needs";
    ds = ds_estimate_zero2(in.params, gpus_per_node, nodes, opt_off);
  } else {
    p.ds_estimator = "estimate_zero3_model_states_mem_needs";
    p.ds_largest_layer_params = in.largest_layer_params > 0 ? in.largest_layer_params : gpt2_largest_layer(in);
    ds = ds_estimate_zero3(in.params, p.ds_largest_layer_params, gpus_per_node, nodes, opt_off,
                           opt_off && param_off, in.ds_zero_init);
  }
  p.ds_estimate_device = ds.device_bytes;
  p.ds_estimate_host = ds.host_bytes;
  return p;
}

}  // namespace zt
