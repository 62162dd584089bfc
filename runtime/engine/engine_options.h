// EngineOptions: everything the ZeRO engine needs to run a step, as plain values composed of the
// options of the objects it builds (runtime/train/engine_config.h fills them from a ds_config; tests
// fill them directly). The engine knows no ds_config.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "base/optimizer.h"
#include "runtime/zero/grad_reducer.h"
#include "runtime/zero/param_gatherer.h"
#include "runtime/zero/param_store.h"
#include "runtime/zero/shard_optimizer.h"
#include "runtime/zero/zero_options.h"

namespace zt {

// Offload beyond the ZeRO choices' devices and ratio (ZeroOptions): each object's own part. With
// optimizer offload the gradients are copied out and the new working params copied in, in chunks of
// chunk_elems elements through pinned buffers, transfers overlapping the host's work (on the CPU
// backend too, so that the path runs there); NVMe pages master weights and moments per sub-group to
// a direct-I/O file, read ahead and written behind.
struct OffloadOptions {
  ParamOffloadOptions params;  // the ParamStore's: offload_param's swap path, buffers and aio
  // The ShardOptimizer's: offload_optimizer's swap path and aio; its buffer_count is also the number
  // of pinned transfer buffers.
  StateOffloadOptions state;
  int64_t chunk_elems = int64_t(1) << 22;  // elements per transfer chunk (not a DeepSpeed key)
  bool pin_memory = true;
};

// Each object below the engine receives its own member as it is; the config mapping
// (runtime/train/engine_config.h) fills them, and fills both `reduce.overlap` and `gather.overlap`
// from overlap_comm.
struct EngineOptions {
  int micro_batch = 1;  // rows per micro-step per rank (M)
  int grad_accum = 1;   // micro-steps per optimizer step (G)
  ZeroOptions zero;     // stage, precisions, where state and parameters live (Partition, ZeRO rules)
  int64_t shard_alignment = 16;  // elements; each shard starts at a multiple of it
  ReduceOptions reduce;          // GradReducer: elements per gradient bucket (runtime/zero/buckets.h)
  GatherOptions gather;          // ParamGatherer: stage 3's fetches, stages 1–2's post-update buckets
  // ShardOptimizer: the optimizer, its schedule, clipping and fp16 loss scaling, its sub-groups.
  OptimizerOptions optimizer;
  UpdateRules update;
  int64_t sub_group_size = 1000000000;
  // Gradient averaging: divide by the world size before the reduction instead of after, or by a
  // factor first and the rest after (DeepSpeed's prescale_gradients, gradient_predivide_factor).
  bool prescale_gradients = false;
  double gradient_predivide_factor = 1.0;
  OffloadOptions offload;
  // Ranks per node n: ranks 0..n-1 share the first node, and so on (NodeTopology); the bytes of
  // every collective are split by link class with it. 0: every rank on one node. Not a ds_config
  // key: the launcher's fact (--ranks-per-node, ZT_RANKS_PER_NODE, or MPI's shared-memory split).
  int ranks_per_node = 0;
  bool checkpoint_activations = false;
  bool trace = false;  // record a timeline (Engine::trace())
  uint64_t seed = 1234;
};

}  // namespace zt
