// unit_buffer_peak_elements: how many elements the engine's UnitBufferPool holds once a training
// step has run — the GradReducer's full-unit gradient buffers and stage 3's gathered units, which
// share the pool by size — worked out before anything is allocated by walking one step's schedule
// (forward, backward, the update's release) with the reducer's and gatherer's rules and no memory.
// The pool never gives a buffer back to the ledger, so this is also the ledger's share of
// comm_buffers beside the communicator's reservation, and the memory plan's unit-buffers row.
//
// The rules walked (runtime/zero/grad_reducer.cpp, param_gatherer.cpp):
//   * backward asks for unit u's gradient buffer before it computes (a tied head asks for the
//     embedding's too); stages 0–1 add it into the full gradient and return it at once; stages 2–3
//     keep it until every bucket holding a piece of it has completed. Buckets are cut by
//     cut_buckets in backward order and issued when complete; without overlap each completes at
//     once, with overlap one stays in flight beside backward (drained before the next micro-step).
//   * stage 3 gathers unit u before its forward and its backward (the embedding again for a tied
//     head), prefetches the next units within stage3_prefetch_bucket_size and
//     stage3_max_live_parameters when overlapping, keeps units at or under the persistence
//     threshold and those used again within stage3_max_reuse_distance, and releases the rest after
//     use; the update releases everything.
// engine_accounting pins the answer to the ledger at every stage, world size, overlap, tie and
// bucket size it runs; a change to either object's rules that is not made here fails there.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/zero/param_gatherer.h"

namespace zt {

struct UnitBufferWalk {
  std::vector<int64_t> padded;  // each unit's padded elements (UnitShard::padded): the pool's sizes
  std::vector<int64_t> numel;   // each unit's parameters (UnitShard::numel): persistence and reuse
  int stage = 0;
  bool overlap = false;                    // overlap_comm
  int64_t reduce_bucket_elems = 500000000; // reduce_bucket_size
  int micro_steps = 1;                     // gradient accumulation
  GatherOptions gather;                    // stage 3's prefetch, persistence, reuse, tied head
};

int64_t unit_buffer_peak_elements(const UnitBufferWalk& walk);

}  // namespace zt
