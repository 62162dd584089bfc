// MemoryPlan: bytes per rank for params, grads and optimizer states by ZeRO stage (the paper's
// (2+2+K)Ψ table), what offload moves to host or NVMe, activations, and DeepSpeed's estimator
// numbers beside ours — computed before anything is allocated.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace zt {

enum class Precision { FP32, FP16, BF16 };
enum class OptimizerKind { Adam, AdamW, SGD, SGDMomentum, Lamb, None };
enum class OffloadDevice { None, CPU, NVMe };

struct PlanInput {
  int64_t params = 0;          // Ψ, total model parameters
  int world_size = 1;          // N, data-parallel ranks
  int stage = 0;               // 0..3
  Precision precision = Precision::FP32;
  OptimizerKind optimizer = OptimizerKind::AdamW;
  OffloadDevice offload_optimizer = OffloadDevice::None;
  double offload_optimizer_ratio = 1.0;  // fraction of optimizer state offloaded (stage 3)
  OffloadDevice offload_param = OffloadDevice::None;
  int ranks_per_node = 1;      // ranks sharing one host (host RAM is per node)
  // Activations (optional; 0 disables the estimate): GPT-2 shapes and micro batch.
  int64_t micro_batch = 0, seq_len = 0, hidden = 0, layers = 0, heads = 0, vocab = 0;
  bool activation_checkpointing = false;
  int64_t reduce_bucket_size = 500000000, allgather_bucket_size = 500000000;
  int64_t stage3_prefetch_bucket_size = 50000000, stage3_max_live_parameters = 1000000000;
};

struct MemoryPlan {
  PlanInput input;
  int optimizer_k = 12;  // K: bytes of optimizer state per parameter (ZeRO paper)
  // Bytes resident per rank on the training device (GPU, or host RAM on the CPU backend).
  double device_params = 0, device_grads = 0, device_optimizer = 0, device_activations = 0,
         device_buffers = 0;
  // Bytes per node held in host RAM (CPU offload) and on NVMe, for all ranks of that node.
  double host_bytes_per_node = 0, nvme_bytes_per_node = 0;
  double device_total() const {
    return device_params + device_grads + device_optimizer + device_activations + device_buffers;
  }
  // DeepSpeed's estimate_zero2/zero3_model_states_mem_needs numbers for the same input (bytes).
  double ds_estimate_device = 0, ds_estimate_host = 0;
};

MemoryPlan make_memory_plan(const PlanInput& in);
nlohmann::json plan_to_json(const MemoryPlan& p);
std::string plan_to_table(const MemoryPlan& p);  // human-readable, GiB with two decimals

}  // namespace zt
