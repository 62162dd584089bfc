// Partition: what one rank keeps of every unit under its ZeRO stage and offload choice — which
// buffers are full or sharded, where its shard starts in each, where the optimizer state and the
// working parameters live, and which collectives the stage issues. Built once; the engine's
// objects read it. Which states the stage shards comes from stage_traits.h, which the memory plan
// reads too. It and the ZeRO rules (zero_rules.h) are where the ZeRO objects read the stage number.
#pragma once

#include <cstdint>
#include <vector>

#include "base/dtype.h"
#include "base/offload.h"
#include "base/optimizer.h"
#include "collectives/communicator.h"
#include "runtime/zero/shard_map.h"
#include "base/stage_traits.h"
#include "runtime/zero/zero_options.h"

namespace zt {

// Where a unit's fp32 master weights and optimizer moments live.
//   Backend: in backend memory, updated there — in place by the host optimizers when that memory is
//            host memory (the CPU backend), by the backend's multi-tensor AdamW on a GPU.
//   Host:    in host memory apart from the backend's (offload_optimizer "cpu", or an optimizer a GPU
//            backend does not run): the reduced gradients are copied out and the new working
//            parameters copied in, chunk by chunk (the unit is "staged").
//   Nvme:    as Host, with master and moments paged per sub-group to a direct-I/O swap file.
enum class StateHome { Backend, Host, Nvme };
// Where a unit's working (act_dtype) parameters live: backend memory, or (stage 3 offload_param)
// this rank's shard in pinned host memory or an NVMe record, copied in just before its all-gather.
enum class ParamHome { Backend, Host, Nvme };

// The run's ZeRO choices, and where this rank stands.
struct PartitionConfig : ZeroOptions {
  int world_size = 1;
  int rank = 0;
  int64_t alignment = 16;  // elements; every shard starts at a multiple of it
  OptimizerType optimizer = OptimizerType::AdamW;
  bool sgd_momentum = false;
  bool backend_is_host = true;  // the backend's memory is host memory the optimizers can address (CPU backend)
};

// One unit, on this rank. Lengths are elements; offsets are element offsets.
struct UnitPart {
  int64_t param_len = 0;       // working params kept: the padded unit (stages 0–2) or its shard (3)
  int64_t grad_len = 0;        // accumulated gradient kept: the padded unit (0–1) or its shard (2–3)
  int64_t state_len = 0;       // master and moments kept: the padded unit (0) or its shard (1–3)
  int64_t state_valid = 0;     // of which real parameters: the optimizer walks [0, state_valid)
  int64_t state_begin = 0;     // unit flat index of state element 0 (0, or the rank's shard start)
  int64_t state_in_grad = 0;   // where state element 0 sits in the accumulated gradient buffer
  int64_t state_in_param = 0;  // where state element 0 sits in the working parameter buffer
  StateHome state = StateHome::Backend;
  ParamHome param = ParamHome::Backend;
  bool device_update = false;  // Adam on a GPU backend: the backend's multi-tensor AdamW
  bool staged() const { return state != StateHome::Backend; }
};

// An element range of a unit's flat, unpadded index.
struct UnitRange {
  int unit = 0;
  int64_t begin = 0, n = 0;
};

// Bytes this rank keeps resident per kind, in backend memory and (offload) apart from it.
struct Footprint {
  uint64_t params = 0, grads = 0, master = 0, optimizer = 0;                  // backend memory
  uint64_t host_params = 0, host_master = 0, host_optimizer = 0;              // host, apart from the backend
  uint64_t nvme = 0;                                                          // swap-file bytes (unpadded)
};

class Partition {
 public:
  Partition(std::vector<UnitSpec> units, const PartitionConfig& config);

  const PartitionConfig& config() const { return cfg_; }
  int stage() const { return cfg_.stage; }
  const StageTraits& traits() const { return traits_; }
  int world_size() const { return cfg_.world_size; }
  int rank() const { return cfg_.rank; }
  int units() const { return map().units(); }
  const ShardMap& map() const { return maps_[size_t(cfg_.rank)]; }
  const ShardMap& map_of(int rank) const { return maps_.at(size_t(rank)); }
  const UnitShard& shard(int u) const { return map().shard(u); }
  const UnitPart& unit(int u) const { return parts_.at(size_t(u)); }

  // --- what the stage does ---------------------------------------------------------------------
  // Stage 3: a unit's parameters are all-gathered before its forward and backward, released after.
  bool gathers_params_for_compute() const { return traits_.shards_params; }
  // Stages 1–2: after the update, every rank's updated shard is all-gathered into the full params.
  bool gathers_params_after_update() const { return traits_.gathers_updated_shards(); }
  // Stages 2–3 reduce-scatter each micro-step's gradients as backward produces them; stages 0–1 add
  // micro-steps into full gradients and reduce once, at the accumulation boundary.
  bool reduces_each_micro_step() const { return traits_.shards_grads; }
  // Stage 0 all-reduces (every rank keeps the whole sum); stages 1–3 reduce-scatter.
  bool all_reduces_grads() const { return traits_.all_reduces_grads(); }
  // fp32 training on the CPU backend with nothing staged: the master weights are the working params.
  bool master_aliases_params() const { return aliases_; }
  bool any_staged() const { return any_staged_; }
  bool any_device_update() const { return any_device_; }

  // The ranks whose global-norm partials this process computes, in rank order, and for rank q the
  // ranges of this process's state arrays (unit, offset, n) that make it. Stage 0 holds every rank's
  // gradient, so it computes all of them (the sum then has the same shape, and bits, as stages 1–3).
  std::vector<int> norm_ranks() const;
  std::vector<UnitRange> norm_ranges(int q) const;

  // Checkpoints: the ranges this rank saves (its shard's real parameters; disjoint across ranks,
  // covering every unit) and the ranges it must load (the whole unit in stage 0).
  std::vector<UnitRange> owned_ranges() const;
  std::vector<UnitRange> needed_ranges() const;

  // Bytes resident per kind with working elements of `working_bytes`, from the partition alone (the
  // objects allocate through the ledger themselves; tests compare the two).
  Footprint footprint(size_t working_bytes) const;
  // Algorithm bytes one step with one micro-step communicates (ZeRO's volumes, padded): stage 0
  // all-reduces Ψ, stages 1–2 reduce-scatter and all-gather Ψ each, stage 3 all-gathers 2Ψ and
  // reduce-scatters Ψ (no reuse; a tied head adds the embedding's gathers).
  uint64_t expected_comm_bytes_per_step(size_t elem_bytes) const;
  // The same volumes per collective (CommOp order), which the link model splits by link class.
  struct CommVolumes {
    uint64_t bytes[kCommOpCount] = {};
  };
  CommVolumes expected_comm_volumes_per_step(size_t elem_bytes) const;

 private:
  PartitionConfig cfg_;
  StageTraits traits_;
  std::vector<ShardMap> maps_;  // every rank's view, this rank's at [rank]
  std::vector<UnitPart> parts_;
  bool aliases_ = false, any_staged_ = false, any_device_ = false;
};

}  // namespace zt
