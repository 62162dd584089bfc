// ParamGatherer: the parameter side of ZeRO.
//   Stage 3, around compute: a unit's shards are all-gathered before its forward and its backward
//   (fetch), the next units prefetched up to stage3_prefetch_bucket_size elements with at most
//   stage3_max_live_parameters gathered at once, and a gathered unit released after use unless it
//   is persistent (stage3_param_persistence_threshold) or used again within
//   stage3_max_reuse_distance elements of compute.
//   hpZ (zero_hpz_partition_size > 1): when a gathered unit is released, this rank copies its
//   1/hpz slice of it (its place in the hpz group: no communication) into a secondary buffer kept
//   for the whole step; later gathers of that unit in the step — backward, later micro-steps'
//   forwards — all-gather the slices over the group alone. release_all() (after the update, a
//   load, any rewrite of the parameters) drops the secondary copy with the gathered ones.
//   MiCS (mics_shard_size): the gathers run over the shard group (ZeroContext::comm); with
//   mics_hierarchical_params_gather in two levels, across the group's nodes then inside each
//   (HierarchicalGather), the same values.
//   qwZ (zero_quantized_weights): every one of those gathers — primary, secondary — sends int8
//   levels and fp32 block scales and is dequantized on arrival (QuantizedGather).
//   Stages 1–2, after the update: the updated shards are all-gathered into every rank's full
//   parameters in buckets of allgather_bucket_size elements (runtime/zero/buckets.h), each bucket
//   issued as soon as every unit it touches is updated, overlapping the remaining updates.
// Walk positions: forward of unit u is position u; backward of unit u is position 2U-1-u.
#pragma once

#include <vector>

#include "runtime/zero/buckets.h"
#include "runtime/zero/gather_schedule.h"
#include "runtime/zero/hierarchical_gather.h"
#include "runtime/zero/param_store.h"
#include "runtime/zero/quantized_gather.h"
#include "runtime/zero/unit_buffers.h"
#include "runtime/zero/zero_context.h"

namespace zt {

class ParamGatherer {
 public:
  // `tied_head`: the head (last unit) reads the embedding unit too (a fact of the model).
  ParamGatherer(ZeroContext& z, UnitBufferPool& pool, ParamStore& store, const GatherOptions& o, bool tied_head);
  ~ParamGatherer();  // waits for gathers still in flight
  ParamGatherer(const ParamGatherer&) = delete;
  ParamGatherer& operator=(const ParamGatherer&) = delete;

  // --- around compute -----------------------------------------------------------------------------
  // Before unit u computes at walk position pos: its gather issued first (collectives complete in
  // issue order), then prefetch of what comes next (stage 3; nothing otherwise).
  void before_compute(int u, int pos);
  // The parameters unit u computes with: the gathered full unit (waited) or the resident buffer.
  const void* params(int u);
  // After unit u computed at pos: release what is not kept (the embedding too after a tied head).
  void after_compute(int u, int pos);
  void release_all();  // every gathered copy goes (stale after the update, or after evaluation)

  // --- after the update (stages 1–2) ----------------------------------------------------------------
  void start_param_sync(int u);  // units 0..u are updated: issue the buckets they complete
  void finish_param_sync();      // every bucket issued and waited
  const std::vector<Bucket>& sync_buckets() const { return sync_.buckets(); }

  // qwZ's sampled quantization error since the last take (zero when qwZ is off).
  QuantError take_quant_error() { return quantized_.take_error(); }

 private:
  struct Gathered {
    void* full = nullptr;
    CommHandlePtr pending;  // the all-gather filling `full`, until waited
    Clock::time_point issued;
    bool from_secondary = false;  // hpZ: gathered over the group from the secondary slices
  };
  void gather(int u, bool wait);
  // `keep_secondary`: with hpZ, copy this rank's slice first (not when the values are stale).
  void release(int u, bool keep_secondary = true);
  void maybe_release(int u, int pos);

  ZeroContext& z_;
  UnitBufferPool& pool_;
  ParamStore& store_;
  GatherOptions o_;
  int U_ = 0;
  GatherSchedule schedule_;  // stage 3's prefetch and release rules
  std::vector<Gathered> gathered_;
  int64_t live_elements_ = 0;
  // hpZ: each unit's secondary slice (padded / hpz elements, on the ledger as parameters) and
  // whether it holds this step's values.
  int64_t hpz_ = 1;
  std::vector<void*> secondary_;
  std::vector<bool> secondary_valid_;
  HierarchicalGather hierarchical_;  // MiCS's two-level gather, when on
  QuantizedGather quantized_;        // qwZ, when on
  // stages 1–2
  BucketStream sync_;  // the update-order buckets and the next to issue
  std::vector<CommHandlePtr> syncing_;
};

}  // namespace zt
