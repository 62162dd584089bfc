// ParamStore: where each unit's working (act_dtype) parameters live on this rank and how new values
// get there — backend memory (the whole unit in stages 0–2, the shard in stage 3), or with stage-3
// parameter offload this rank's shard in pinned host memory or an NVMe record, brought into backend
// memory just before its all-gather.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "offload/aio_uring.h"
#include "offload/nvme_swapper.h"
#include "offload/pinned_memory.h"
#include "runtime/zero/host_transfer.h"
#include "runtime/zero/unit_buffers.h"
#include "runtime/zero/zero_context.h"

namespace zt {

struct ParamOffloadOptions {
  std::string nvme_path;            // offload_param.nvme_path
  int buffer_count = 5;             // offload_param.buffer_count
  int64_t buffer_size = 100000000;  // offload_param.buffer_size (elements)
  offload::AioConfig aio;
};

class ParamStore {
 public:
  // `transfer` is used for staged units on a device backend (new values copied in); may be null
  // when no unit is staged.
  ParamStore(ZeroContext& z, offload::PinnedAllocator& pinned, HostTransfer* transfer, const ParamOffloadOptions& o);

  // The rank's working buffer of unit u (param_len elements): backend memory or pinned host memory;
  // null for an NVMe record.
  void* resident(int u) const { return work_[size_t(u)]; }
  // Where state element `e` of unit u sits in its working buffer.
  void* working_at(int u, int64_t e) const { return z_.element_at(work_[size_t(u)], z_.part.unit(u).state_in_param + e); }
  // Initial values of what this rank keeps (param_len fp32 values, rounded to the working type here).
  // Also between steps, to set every unit anew (a checkpoint load), followed by finish_initialize.
  // `values` may be the working buffer itself (an fp32 master that aliases it): nothing is copied.
  void initialize(int u, const float* values);
  void finish_initialize();  // NVMe: every record written

  // Stage 3: the shard of unit u in backend memory, ready to be the all-gather's source (a host or
  // NVMe shard is copied into a pooled buffer, the copy waited); give it back with
  // release_gather_source.
  const void* gather_source(int u);
  void release_gather_source(int u);

  // New working values of state elements [begin, begin + n) of unit u from fp32 master values:
  // nothing when the master is the working copy; the NVMe image; a copy-in through the ring for a
  // staged unit on a device; a direct rounded write into host-addressable memory otherwise.
  void write(int u, int64_t begin, int64_t n, const float* values);
  // The pass that updates the master may write the working copy itself (host memory of the
  // working type): true for a pinned host shard on a 16-bit backend.
  bool host_working_copy(int u) const { return z_.part.unit(u).param == ParamHome::Host; }
  // After unit u's update: its NVMe record is rewritten.
  void finish_update(int u);
  // Unit u's new working values are in place in backend memory (a staged unit's copies-in landed).
  void wait_written(int u) {
    if (transfer_ && z_.part.unit(u).staged()) transfer_->wait_unit(u);
  }

  // n fp32 values as act_dtype on the host (the CPU backend rounds to the training precision).
  void to_act(void* dst, const float* src, int64_t n) const;

 private:
  void* next_buffer();
  ZeroContext& z_;
  offload::PinnedAllocator& pinned_;
  HostTransfer* transfer_;
  ParamOffloadOptions opt_;
  std::vector<void*> work_;
  std::vector<offload::PinnedBuffer> host_shards_;    // ParamHome::Host
  UnitBufferPool shard_pool_;                         // backend buffers for the gather sources
  std::vector<void*> shard_in_;                       // unit -> its shard in backend memory
  // NVMe records: one per unit's shard, through buffer_count reused pinned buffers.
  std::unique_ptr<offload::NvmeSwapper> swapper_;
  std::vector<offload::PinnedBuffer> buffers_;
  size_t next_buffer_ = 0;
  std::vector<std::vector<char>> initial_;  // NVMe: initial shard images until finish_initialize
  std::vector<char> image_;                 // NVMe: the shard being rebuilt during the update
  int image_unit_ = -1;
  std::vector<uint16_t> stage16_;           // initial values on their way to a 16-bit device
};

}  // namespace zt
