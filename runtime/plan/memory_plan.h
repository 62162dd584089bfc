// MemoryPlan: bytes per rank for params, grads and optimizer states by ZeRO stage (the paper's
// (2+2+K)Ψ table), what offload moves to host or NVMe, activations, and DeepSpeed's estimator
// numbers beside ours — computed before anything is allocated.
//
// Formulas (Ψ = params, N = world size, w = bytes of the working dtype: 2 for fp16/bf16, 4 for fp32):
//
//   K, bytes of optimizer-owned state per parameter = master_k + state_k.
//     state_k: Adam/AdamW/Lamb 8 (two fp32 moments), SGD with momentum 4, plain SGD 0, None 0.
//     master_k: 4 under mixed precision (the fp32 master copy, partitioned with the optimizer state
//     as in the ZeRO paper), 0 in fp32 training (the fp32 params are the master).
//     So mixed-precision Adam K = 12 (the paper's value), SGD+momentum K = 8, plain SGD K = 4;
//     fp32 Adam K = 8, SGD+momentum K = 4, plain SGD K = 0 (the "4 / 0" are state_k).
//   Per rank on the training device, stage s partitions (divides by N):
//     params     = wΨ      (s = 3: wΨ/N)
//     grads      = wΨ      (s >= 2: wΨ/N)
//     optimizer  = KΨ      (s >= 1: KΨ/N)
//   Mixed-precision Adam: stage 0 16Ψ, 1 4Ψ+12Ψ/N, 2 2Ψ+14Ψ/N, 3 16Ψ/N.
//   fp32 Adam: 4Ψ params + 4Ψ grads + 8Ψ moments, partitioned the same way.
//
// Offload (a fraction r = offload_optimizer_ratio of the optimizer partition moves; r = 1 unless
// stage 3). Let D = N for stage >= 1, 1 for stage 0 (nothing is partitioned there).
//   offload_optimizer = cpu : host per rank  = r·(4 + state_k + 4)·Ψ/D  (fp32 master, moments and
//                             the fp32 gradient partition the CPU optimizer reads, as DeepSpeed's
//                             ZeRO-Offload keeps them); device optimizer = (1-r)·KΨ/D; device
//                             grads stay as without offload (wΨ/N from stage 2, wΨ at stage 1):
//                             the engine reduces into its gradient shard on the device and copies
//                             it out from there (DeepSpeed streams the reduced partitions to the
//                             host instead, and keeps no device shard at stage 2).
//   offload_optimizer = nvme: nvme per rank  = r·(4 + state_k)·Ψ/D; host per rank = r·4Ψ/D (fp32
//                             grads) + optimizer_buffer_count·min(sub_group_size, Ψ/D)·4 (pinned
//                             swap buffers); device as for cpu.
//   offload_param (stage 3 only): cpu moves the param shard wΨ/N to host; nvme moves it to NVMe
//                             and adds param_buffer_count·min(param_buffer_size, Ψ)·w pinned host
//                             buffers. Device params become 0 (gathered params count as buffers).
//   Per node = per rank × min(ranks_per_node, N): the ranks of a node share its RAM and disk.
//
// Activations per rank: what the model allocates for the micro batch (PlanInput::activation_bytes,
// from causal_lm_activation_bytes_for (the model class's own formula) with the backend's attention_saved_bytes: the residual stream,
// each block's saved activations or one block's with checkpointing, the padded-vocabulary logits in
// the working type, the gradient scratch), so that the plan equals the ledger's Activations; 0 when
// no model is known (check --params).
//
// The communicator's own working buffers per rank (PlanInput::comm_buffer_bytes, what
// Communicator::buffer_bytes_for answers; comm_options.h's mpi_buffer_bytes for the MPI
// communicator: two buffers of min(the padded model in fp32, half of ZT_COMM_BUFFER_MB) each, 0 at
// world size 1 and under NCCL): host memory, so device buffers on the CPU backend and host RAM beside
// the GPU. NCCL's own device buffers (PlanInput::comm_device_bytes, Communicator::device_buffer_bytes:
// measured by the run when NCCL starts; 0 in `check`) are device buffers.
//
// The checkpoint snapshot (PlanInput::checkpoint_snapshot_bytes, with --save): a background save
// copies the rank's owned master and moments, (4 + state_k)·Ψ/S in fp32 at every stage (S: the world,
// or MiCS's shard group, whose first group alone owns the state), into one pinned host buffer held
// from start-up so that training goes on while the file is written: host RAM on every backend. Per
// node it counts the node's owning ranks: all of them, or under MiCS min(S, ranks per node).
//
// The process baseline (PlanInput::process_baseline, measured by the run at start-up: the binary,
// its libraries, MPI's and the BLAS/OpenMP threads' own memory) is a row of its own, outside the
// device total, so that the ledger and the operating system's resident set can be compared.
//
// Buffers per rank in the working dtype: with a model (PlanInput::unit_buffer_bytes), what the
// engine's full-unit buffer pool holds after a step — the gradient buffers of whole units and stage
// 3's gathered units, from walking the step's schedule with the reducer's and gatherer's own rules
// (runtime/zero/unit_buffer_plan.h) — and, when ranks hold shards, the one fp32 unit gathered
// between steps (checksum, export, load): the ledger's comm_buffers peak less the communicator's.
// Without a model (check --params) an estimate from the bucket sizes: the reduce bucket
// min(reduce_bucket_size, Ψ)·w at every stage; stages 1-2 add the all-gather bucket
// min(allgather_bucket_size, Ψ)·w; stage 3 adds the gathered-parameter working set
// max(min(stage3_max_live_parameters, Ψ), min(stage3_prefetch_bucket_size, Ψ))·w.
//
// DeepSpeed's estimators (documented deepspeed.runtime.zero estimate_zero2/zero3_model_states_mem_needs,
// buffer factor 1.5, G = GPUs per node, M = nodes; "per CPU" is per node):
//   zero2 (used for stages 0-2), no offload: device 4Ψ + 16Ψ/N, host 4Ψ·G·1.5
//   zero2, offload_optimizer:                device 2Ψ,         host Ψ·max(4G, 16)·1.5
//   zero3, with P = largest layer params (zero_init chooses the host formula):
//     no offload:        device 4P + 18Ψ/N, host 4P·G·1.5 (zero_init) or 4Ψ·G·1.5
//     offload optimizer: device 4P + 2Ψ/N,  host 16Ψ/M·1.5 (zero_init) or Ψ·max(4G, 16/M)·1.5
//     offload both:      device 4P,         host 18Ψ/M·1.5 (zero_init) or Ψ·max(4G, 18/M)·1.5
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "base/dtype.h"
#include "base/offload.h"
#include "base/optimizer.h"

namespace zt {


struct PlanInput {
  int64_t params = 0;          // Ψ, total model parameters
  int world_size = 1;          // N, data-parallel ranks
  int stage = 0;               // 0..3
  DType precision = DType::F32;
  // The CPU backend emulates bf16/fp16: values are rounded where a GPU would store 16 bits, but kept
  // in fp32 elements, so its working elements take 4 bytes in every precision.
  bool emulates_16bit_in_fp32 = false;
  std::optional<OptimizerType> optimizer = OptimizerType::AdamW;  // none: no optimizer state
  bool sgd_momentum = false;   // SGD keeps a momentum buffer
  // Optimizer memory beyond its fp32 arrays per rank: the compressed optimizers' error feedback
  // (each tensor's worker error n_pad + server error n_pad/N, fp32) and 0/1 Adam's synced point
  // (Ψ fp32; EnginePlan::optimizer_extra_bytes); unset: the estimate without a model, 4Ψ(1 + 1/N)
  // at N > 1 (padding left out), + 4Ψ for ZeroOneAdam and OneBitLamb, and 0 otherwise. A checkpoint's snapshot
  // holds each rank's own arrays too.
  std::optional<uint64_t> optimizer_extra_bytes;
  OffloadDevice offload_optimizer = OffloadDevice::None;
  double offload_optimizer_ratio = 1.0;  // fraction of optimizer state offloaded (stage 3)
  OffloadDevice offload_param = OffloadDevice::None;
  int ranks_per_node = 1;      // ranks sharing one host (host RAM is per node)
  // Stage 3's hpZ (zero_hpz_partition_size): each rank also keeps a 1/hpz slice of every unit in
  // device memory, counted with the parameters. 1: off.
  int hpz_partition_size = 1;
  // Stage 3's MiCS (mics_shard_size): the model states are sharded over groups of this many ranks,
  // not the world, and replicated across the groups; 0: off.
  int mics_shard_size = 0;
  // GPT-2 shapes and micro batch (the DeepSpeed estimators' largest layer, the JSON input).
  int64_t micro_batch = 0, seq_len = 0, hidden = 0, layers = 0, heads = 0, vocab = 0;
  bool activation_checkpointing = false;
  // What the model allocates per rank (causal_lm_activation_bytes_for); unset: no model, 0.
  std::optional<double> activation_bytes;
  int64_t reduce_bucket_size = 500000000, allgather_bucket_size = 500000000;
  int64_t stage3_prefetch_bucket_size = 50000000, stage3_max_live_parameters = 1000000000;
  // Offload staging (DeepSpeed defaults) and the DeepSpeed-estimator inputs.
  int64_t sub_group_size = 1000000000;
  int optimizer_buffer_count = 4, param_buffer_count = 5;
  int64_t param_buffer_size = 100000000;
  // The engine's full-unit buffers at their peak (EnginePlan::unit_buffer_bytes); unset: no model.
  std::optional<double> unit_buffer_bytes;
  uint64_t comm_buffer_bytes = 0;    // the communicator's own working buffers per rank (host memory)
  uint64_t comm_device_bytes = 0;    // its buffers in device memory (NCCL: measured at its start)
  bool backend_is_host = false;      // the CPU backend: its device memory is host RAM
  std::optional<uint64_t> process_baseline;  // resident bytes at start-up, measured by the run
  // The checkpoint writer's pinned host snapshot per rank (EnginePlan::checkpoint_snapshot_bytes: the
  // master and moments of the rank's owned ranges in fp32) and the --save folder; 0 and empty: no saves.
  uint64_t checkpoint_snapshot_bytes = 0;
  std::string save_dir;
  int64_t largest_layer_params = 0;  // for DeepSpeed's zero3 estimate; 0: derived from the shapes
  bool ds_zero_init = true;          // which zero3 host formula to show (zero.Init on or off)
};

// Bytes per working element on the training device: 2 for bf16/fp16 on a GPU, 4 for fp32 and on
// the CPU backend (which keeps 16-bit values in fp32 elements).
inline int plan_working_bytes(const PlanInput& in) {
  return in.precision != DType::F32 && !in.emulates_16bit_in_fp32 ? 2 : 4;
}

struct MemoryPlan {
  PlanInput input;
  int optimizer_k = 12;  // K: bytes of optimizer state per parameter (ZeRO paper) = master_k + state_k
  int master_k = 4;      // fp32 master copy bytes per parameter (0 in fp32 training)
  int state_k = 8;       // optimizer moment bytes per parameter (Adam 8, SGD+momentum 4, SGD 0)
  int working_bytes = 2; // w: bytes per element of params/grads/activations on the device
  // Bytes resident per rank on the training device (GPU, or host RAM on the CPU backend).
  double device_params = 0, device_grads = 0, device_optimizer = 0, device_activations = 0,
         device_buffers = 0;
  double comm_buffers = 0;  // the communicator's part (in device_buffers on the CPU backend, else host)
  double comm_device_buffers = 0;  // the communicator's device memory (NCCL's; in device_buffers)
  double checkpoint_snapshot = 0;  // the checkpoint writer's host snapshot per rank (in host_bytes_per_rank)
  int snapshot_owners_on_node = 0;  // ranks of a node holding one (MiCS: only the first shard group's)
  // Bytes per node held in host RAM (CPU offload; beside a GPU also the communicator's host
  // buffers) and on NVMe, for all ranks of that node.
  double host_bytes_per_node = 0, nvme_bytes_per_node = 0;
  double host_bytes_per_rank = 0, nvme_bytes_per_rank = 0;
  int ranks_on_node = 1;  // min(ranks_per_node, world_size)
  double device_model_states() const { return device_params + device_grads + device_optimizer; }
  double device_total() const {
    return device_params + device_grads + device_optimizer + device_activations + device_buffers;
  }
  // DeepSpeed's estimate_zero2/zero3_model_states_mem_needs numbers for the same input (bytes).
  double ds_estimate_device = 0, ds_estimate_host = 0;
  std::string ds_estimator;  // which DeepSpeed function the numbers follow
  int64_t ds_largest_layer_params = 0;
};

std::string optimizer_name(const PlanInput& in);  // "AdamW", "SGD+momentum", "none", ...

// The ranks the model states are sharded over: the world, or MiCS's shard group at stage 3.
int plan_state_shards(const PlanInput& in);
// The checkpoint snapshot of an owning rank without the model's partition, (4 + state_k)·Ψ/S rounded
// up: what `check --save` plans (a run passes the engine's exact bytes, which differ by the padding).
uint64_t checkpoint_snapshot_estimate(const PlanInput& in);
MemoryPlan make_memory_plan(const PlanInput& in);
nlohmann::json plan_to_json(const MemoryPlan& p);
std::string plan_to_table(const MemoryPlan& p);  // human-readable, GiB with two decimals

}  // namespace zt
