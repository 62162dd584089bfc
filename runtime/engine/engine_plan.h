// EnginePlan: what an engine built with these options on this rank of this world will keep, split
// and reserve, decided once before anything is allocated — the partition (and through it the stage
// traits), the communication groups' shape, the ZeRO rules the options break on this backend, the
// unit-buffer walk and its peak, the communicators' working buffers, the checkpoint's snapshot and
// needed ranges. `zerotrain check`, the run's checkpoint check, memory plan and preflight, and the
// engine itself read this one value: the engine only allocates what it says and conducts the step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "collectives/communicator.h"
#include "kernels/backend.h"
#include "runtime/checkpoint/sharded_state.h"
#include "runtime/engine/engine_options.h"
#include "runtime/model/model_config.h"
#include "runtime/zero/comm_groups.h"
#include "runtime/zero/partition.h"
#include "runtime/zero/quantized_reduce.h"
#include "runtime/zero/unit_buffer_plan.h"
#include "runtime/zero/zero_rules.h"

namespace zt {

// qgZ's traffic as the gradient reducer cut it: its two all-to-all hops per micro-step and the
// elements of 1-D tensors it reduce-scatters exactly instead.
struct QuantizedTraffic {
  bool on = false;
  QuantizedReduce::WireBytes wire;
  uint64_t exact_elements_per_micro_step = 0;
};

class EnginePlan {
 public:
  // `world_size` and `rank`: the world's; under MiCS the partition spans the shard group of
  // mics_shard_size consecutive ranks this rank is in. No allocation, no communication.
  EnginePlan(const ModelConfig& model, const EngineOptions& options, const BackendCaps& caps, int world_size, int rank);

  // What a backend can run, as the ZeRO rules read it: the CPU backend has no native stream (its
  // memory is the host's) and stores fp32 (other precisions are emulated by rounding).
  static BackendCaps capabilities_of(Backend& b);

  const ModelConfig& model() const { return model_; }
  const EngineOptions& options() const { return opt_; }
  const BackendCaps& caps() const { return caps_; }
  int world_size() const { return world_size_; }
  // This rank's partition, built once; the engine takes it (shared) rather than building its own.
  const std::shared_ptr<Partition>& partition() const { return part_; }
  // The ranks the partition spans: the world, or MiCS's shard group.
  int partition_ranks() const { return part_->world_size(); }
  // The groups split from the world (stage 3's MiCS, hpZ, hierarchical gather, qgZ roles).
  const CommGroupShape& group_shape() const { return shape_; }
  // The options as the ZeRO rules (runtime/zero/zero_rules.h) read them, with this partition's
  // largest parameter shard; and the rules they break on this backend (empty for a set config
  // validation passed).
  ZeroOptionSet zero_option_set() const;
  std::vector<ZeroRule> broken_rules() const;
  // The largest call of the shard group (the model in 4-byte elements) and of the other groups (a
  // unit, or MiCS's replica all-reduce of every gradient shard): what the communicators reserve for.
  std::pair<uint64_t, uint64_t> largest_calls() const;
  // One step's walk over the units (stage, micro-steps, the reducer's and the gather schedule's
  // options) for the buffer plan and the link predictor.
  UnitBufferWalk unit_buffer_walk() const;
  // The bytes of full-unit buffers the engine holds at its peak: the pool's gradient and stage 3
  // gathered-unit buffers after a step (unit_buffer_plan.h) and, when ranks hold master shards, the
  // one fp32 unit the checksum, export and checkpoint load gather beside it. The memory plan's
  // buffers row less the communicator's. element_bytes: the backend's working element.
  uint64_t unit_buffer_bytes(size_t element_bytes) const;
  // The working buffers the engine's communicators reserve on `world` (its split groups' included):
  // the memory plan's communicator row.
  uint64_t comm_buffer_bytes(const Communicator& world) const;
  // This rank's checkpoint snapshot (every fp32 state array of its owned ranges): Ψ/N at every
  // stage, Ψ/S on MiCS's first shard group and 0 on the ranks past it, which own nothing; with
  // a compressed optimizer also its per-rank arrays at their largest (the error feedback; 0/1 Adam's
  // own parameters, momentum and synced point between a local step and the next sync).
  uint64_t checkpoint_snapshot_bytes() const;
  // Optimizer memory beyond its fp32 arrays on this rank: the compressed optimizers' error feedback
  // and 0/1 Adam's synced point; 0 otherwise.
  uint64_t optimizer_extra_bytes() const;
  // The ranges EngineCheckpoint::needed() will give on this rank: a run checks the checkpoint bytes
  // it will load before it allocates.
  std::vector<ElementRange> checkpoint_needed_ranges() const;
  // What StepStats::comm_links will read for one step (every micro-step) over `groups` (the
  // engine's, split as group_shape() says): the partition's volumes (reductions repeated per
  // micro-step where the stage does so; stage 3's gathers walked with the gather schedule: tied
  // head, persistence, reuse; hpZ's from the secondary copy, qwZ's levels and scales, MiCS's
  // hierarchical halves), qgZ's hops, MiCS's replica all-reduce, and the engine's own scalar
  // exchanges (the step's loss, and the norm's per-rank partials where ranks hold shards: 8 bytes
  // per rank each, as all-gathers), split by each group's link model. Lamb's per-tensor
  // trust-ratio exchange is not in it. `comm`: a compressed optimizer's kind of step (Compressed: no
  // gradient all-reduce, one compressed call over every tensor and the overflow flag and norm
  // instead; Local: the flag and norm alone).
  LinkBytes expected_link_bytes_per_step(const CommGroups& groups, size_t element_bytes, const QuantizedTraffic& qgz,
                                         StepComm comm = StepComm::Exact) const;

 private:
  std::vector<int64_t> tensor_sizes() const;  // every parameter tensor's size, in model order
  ModelConfig model_;
  EngineOptions opt_;
  BackendCaps caps_;
  int world_size_ = 1, rank_ = 0;
  CommGroupShape shape_;
  std::shared_ptr<Partition> part_;
};

}  // namespace zt
