// ZeroOptions: a run's ZeRO choices — the stage, the precisions, and where the optimizer state and
// the parameters live — as one struct that the engine's options hold, the partition is built from
// (PartitionConfig) and the ZeRO rules check (ZeroOptionSet), so no layer copies them field by field.
#pragma once

#include <optional>

#include "base/dtype.h"
#include "base/offload.h"

namespace zt {

struct ZeroOptions {
  int stage = 0;                  // ZeRO stage 0..3
  DType precision = DType::F32;   // training precision
  // communication_data_type and data_types.grad_accum_dtype; unset = the training precision. The CPU
  // backend emulates them by rounding where the data would be stored in that type (before and after
  // each gradient collective; after each accumulation); the CUDA backend supports only bf16 for both.
  std::optional<DType> comm_precision, grad_accum_precision;
  OffloadDevice offload_optimizer = OffloadDevice::None;  // offload_optimizer.device ("ratio 0" is None)
  // Stage 3, cpu: the share of this rank's optimizer state offloaded, (0, 1]. Whole units, in walk
  // order, go to the host until the share reaches it; the rest stays in backend memory.
  double offload_ratio = 1.0;
  // Stage 3: offload_param.device — each unit's parameter shard in pinned host memory (cpu) or an
  // NVMe record (nvme), copied into backend memory just before the unit's all-gather.
  OffloadDevice offload_param = OffloadDevice::None;
  // Stage 3's MiCS (mics_shard_size): the model states are sharded over groups of this many
  // consecutive ranks and replicated across the world / size groups; 0 = off (over the world).
  // The partition sees the group (its world size and this rank's place in it); the gradient shards
  // are all-reduced across the replicas at the accumulation boundary.
  int mics_shard_size = 0;
};

}  // namespace zt
