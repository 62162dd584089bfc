// EngineOptions: everything the ZeRO engine needs to run a step, as plain values (the config
// module fills them from a ds_config; tests fill them directly).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "base/optimizer.h"
#include "offload/aio_uring.h"
#include "optim/loss_scaler.h"
#include "optim/lr_scheduler.h"
#include "base/dtype.h"
#include "base/offload.h"

namespace zt {

// Where the optimizer's fp32 state lives. CPU: host memory, apart from the backend's (on the CPU
// backend too, so that the offload path runs there: gradients are copied out and the new working
// params copied in, in chunks of chunk_elems elements through pinned buffers, transfers overlapping
// the host's work). NVMe: the same, with master weights and moments paged per sub-group to a
// direct-I/O file under nvme_path, read ahead and written behind with buffer_count buffers.
struct OffloadOptions {
  OffloadDevice optimizer = OffloadDevice::None;
  // Stage 3, cpu: the share of this rank's optimizer state offloaded, (0, 1]. Whole units, in walk
  // order, go to the host until the share reaches `ratio`; the rest stays in backend memory.
  double ratio = 1.0;
  int64_t chunk_elems = int64_t(1) << 22;  // elements per transfer chunk (not a DeepSpeed key)
  // Stage 3: cpu keeps each unit's parameter shard in pinned host memory, nvme in a swap file; it is
  // copied into backend memory just before the unit's all-gather.
  OffloadDevice param = OffloadDevice::None;
  std::string param_nvme_path;
  // Parameter NVMe: buffer_count pinned buffers of buffer_size elements stage the records (every
  // unit's shard must fit in one; start-up refuses otherwise).
  int param_buffer_count = 5;
  int64_t param_buffer_size = 100000000;
  std::string nvme_path;
  int buffer_count = 4;
  bool pin_memory = true;
  offload::AioConfig aio;
};

struct EngineOptions {
  int stage = 0;                    // ZeRO stage 0..3
  int micro_batch = 1;              // rows per micro-step per rank (M)
  int grad_accum = 1;               // micro-steps per optimizer step (G)
  DType precision = DType::F32;
  // communication_data_type and data_types.grad_accum_dtype; unset = the training precision. The CPU
  // backend emulates them by rounding where the data would be stored in that type (before and after
  // each gradient collective; after each accumulation); the CUDA backend supports only bf16 for both.
  std::optional<DType> comm_precision, grad_accum_precision;
  bool overlap_comm = false;
  // Elements per gradient bucket (one collective each; runtime/zero/buckets.h) and per bucket of the
  // stage 1–2 post-update all-gather.
  int64_t reduce_bucket_size = 500000000;
  int64_t allgather_bucket_size = 500000000;
  // Stage 3.
  int64_t param_persistence_threshold = 100000;
  int64_t prefetch_bucket_size = 50000000;
  int64_t max_live_parameters = 1000000000;
  int64_t max_reuse_distance = 1000000000;
  int64_t sub_group_size = 1000000000;
  // Step math.
  OptimizerOptions optimizer;
  std::shared_ptr<const LrScheduler> scheduler;  // null: constant optimizer.lr
  double gradient_clipping = 0.0;                 // max global norm; 0 = off
  bool prescale_gradients = false;
  double gradient_predivide_factor = 1.0;
  LossScalerConfig loss_scaler;  // fp16 only
  OffloadOptions offload;
  bool checkpoint_activations = false;
  bool trace = false;  // record a timeline (Engine::trace())
  uint64_t seed = 1234;
  int64_t shard_alignment = 16;  // elements; each shard starts at a multiple of it
};

}  // namespace zt
