// unit_buffer_peak_elements: how many elements the engine's UnitBufferPool holds once a training
// step has run — the GradReducer's full-unit gradient buffers and stage 3's gathered units, which
// share the pool by size — worked out before anything is allocated by walking one step's schedule
// (forward, backward, the update's release) with the reducer's and gatherer's rules and no memory.
// The pool never gives a buffer back to the ledger, so this is also the ledger's share of
// comm_buffers beside the communicator's reservation, and the memory plan's unit-buffers row.
//
// The rules come from where the objects read them: stage 3's prefetch and release from the
// GatherSchedule the ParamGatherer runs, the gradient buckets from the reducer's BucketStream, how
// many gradient collectives stay in flight from reduce_calls_kept_in_flight, which buffers a stage
// keeps from StageTraits. What the walk still writes itself is the order of the calls (the engine's
// forward and backward walk) and where each buffer is asked for and returned:
//   * backward asks for unit u's gradient buffer before it computes (a tied head asks for the
//     embedding's too); stages 0–1 add it into the full gradient and return it at once; stages 2–3
//     keep it until every bucket holding a piece of it has completed, buckets issued when complete;
//   * stage 3 gathers unit u before its forward and its backward (the embedding again for a tied
//     head) and releases what the schedule does not keep; the update releases everything.
// engine_accounting pins the answer to the ledger at every stage, world size, overlap, tie and
// bucket size it runs.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/zero/grad_reducer.h"
#include "runtime/zero/param_gatherer.h"

namespace zt {

struct UnitBufferWalk {
  std::vector<int64_t> padded;  // each unit's padded elements (UnitShard::padded): the pool's sizes
  std::vector<int64_t> numel;   // each unit's parameters (UnitShard::numel): persistence and reuse
  int stage = 0;
  int micro_steps = 1;   // gradient accumulation
  ReduceOptions reduce;  // the GradReducer's buckets and overlap
  int ranks = 1;         // the partition's ranks (qgZ's balanced buckets)
  GatherOptions gather;  // stage 3's prefetch, persistence, reuse
  bool tied_head = false;
};

int64_t unit_buffer_peak_elements(const UnitBufferWalk& walk);
// The elements stage 3's gatherer fetches in one step of the same walk (every micro-step's forward
// and backward, a tied head's second fetch of the embedding, less what persistence and reuse keep);
// 0 below stage 3. The communication predictor's all-gather volumes: from every rank's primary
// shard (over the world), and with hpZ from the secondary slices (over the hpz group) once a unit
// has been released in the step.
// Per unit, how many times it was gathered from each (qwZ's bytes are per call, not per element).
struct UnitGatherVolumes {
  int64_t primary = 0, secondary = 0;
  std::vector<int64_t> primary_calls, secondary_calls;  // per unit
};
UnitGatherVolumes unit_gather_elements_per_step(const UnitBufferWalk& walk);

}  // namespace zt
