// GatherSchedule: stage 3's fetch rules, written once — which units a fetch prefetches behind it,
// and whether a unit stays gathered after it computed — over the walk of one step: forward
// positions 0..U-1 (unit = position), backward positions U..2U-1 (unit = 2U-1-position). The
// ParamGatherer issues what it answers; the buffer plan (unit_buffer_plan.*) walks the same answers
// with a counting pool, so the plan and the engine cannot disagree on a rule.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace zt {

// The user's stage-3 and stage 1–2 gather options (ds_config zero_optimization keys).
struct GatherOptions {
  bool overlap = false;                          // overlap_comm: prefetch, and gathers beside the update
  int64_t prefetch_bucket_size = 50000000;       // elements
  int64_t persistence_threshold = 100000;        // units with at most this many parameters stay gathered
  int64_t max_live_parameters = 1000000000;
  int64_t max_reuse_distance = 1000000000;
  int64_t allgather_bucket_size = 500000000;     // stages 1–2
  // Stage 3's hpZ (zero_hpz_partition_size): > 1 keeps a secondary 1/hpz slice of every unit once
  // it is released, which later gathers of the step fetch from the group of hpz consecutive ranks.
  int64_t hpz_partition_size = 1;
  // MiCS's mics_hierarchical_params_gather: stage 3's gathers over a shard group that spans nodes
  // go in two levels, first across its nodes among the ranks of one local index, then inside each
  // node (runtime/zero/hierarchical_gather.h); the values are the flat gather's.
  bool mics_hierarchical = false;
  // ZeRO++'s qwZ (zero_quantized_weights): every stage-3 parameter all-gather, the secondary's too,
  // sends int8 levels and fp32 block scales (runtime/zero/quantized_gather.h), except a persistent
  // unit's, which goes exact (DeepSpeed gathers its persistent parameters with quantize=False).
  bool quantized_weights = false;

  // A unit of `numel` parameters at or under the persistence threshold: kept gathered until the
  // update makes it stale, and under qwZ gathered exactly.
  bool persistent(int64_t numel) const { return numel <= persistence_threshold; }
  bool quantizes_gather_of(int64_t numel) const { return quantized_weights && !persistent(numel); }
};

class GatherSchedule {
 public:
  GatherSchedule() = default;
  // padded: each unit's gathered size (UnitShard::padded); numel: its parameters (UnitShard::numel);
  // tied_head: the head (last unit) reads the embedding unit (0) too.
  GatherSchedule(std::vector<int64_t> padded, std::vector<int64_t> numel, const GatherOptions& o, bool tied_head);

  int units() const { return int(padded_.size()); }
  int64_t padded(int u) const { return padded_[size_t(u)]; }
  int unit_at(int pos) const { return pos < units() ? pos : 2 * units() - 1 - pos; }
  // Unit u's compute also reads the embedding (a tied head).
  bool reads_embedding(int u) const { return tied_head_ && u == units() - 1; }

  // After unit_at(pos) was fetched with `live` elements gathered: the units to fetch ahead, in walk
  // order — the next ones not yet gathered while each fits the prefetch budget and the live limit
  // (none without overlap). `gathered[v]`: unit v is gathered or in flight.
  std::vector<int> prefetch_after(int pos, int64_t live, std::vector<bool> gathered) const;
  // After unit u computed at `pos` with `live` elements gathered: true if it stays gathered (at or
  // under the persistence threshold, or used again within the reuse distance while the live limit
  // holds); otherwise it is released.
  bool keeps_after(int u, int pos, int64_t live) const;

 private:
  bool uses_unit(int pos, int u) const;

  std::vector<int64_t> padded_, numel_;
  GatherOptions o_;
  bool tied_head_ = false;
};

}  // namespace zt
