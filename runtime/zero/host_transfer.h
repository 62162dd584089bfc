// HostTransfer: ZeRO-Offload's traffic between backend memory and the host optimizer, through a ring
// of pinned chunks (offload/staging_ring.h) so each transfer overlaps the host's work on another:
// reduced gradients of staged units out (fp32 on the host), new working parameters back in.
// It counts the gradient bytes it copies out: without offload that is zero (tests pin it).
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "offload/pinned_memory.h"
#include "offload/staging_ring.h"
#include "runtime/zero/zero_context.h"

namespace zt {

class HostTransfer {
 public:
  // chunk_elems: elements per transfer (capped at the largest range moved); buffer_count >= 2 slots.
  HostTransfer(ZeroContext& z, offload::PinnedAllocator& pinned, int buffer_count, int64_t chunk_elems,
               int64_t largest_range);
  int64_t chunk_elems() const { return chunk_; }

  // Copies n elements at `src` (backend memory, act_dtype) to host fp32 `dst`, chunk k+1 in flight
  // while chunk k is converted. Several ranges go through one pipeline.
  struct Out {
    const void* src;
    float* dst;
    int64_t n;
  };
  void copy_out(const std::vector<Out>& ranges);
  // Fills backend memory [dst, dst + n elements) chunk by chunk: fill(slot, first, len) writes
  // elements [first, first + len) of the range (act_dtype) into the pinned slot, then its copy-in
  // runs while the next chunk is filled. Unit u's last copy-in is remembered for wait_unit(u).
  void publish(int u, void* dst, int64_t n, const std::function<void(void* slot, int64_t first, int64_t len)>& fill);
  void wait_unit(int u);  // unit u's copies-in have landed
  void drain();           // every transfer has landed
  uint64_t grad_bytes_out() const { return grad_bytes_out_; }

 private:
  ZeroContext& z_;
  std::unique_ptr<offload::StagingRing> ring_;
  int64_t chunk_ = 1;
  std::vector<Backend::CopyTicket> published_;
  uint64_t grad_bytes_out_ = 0;
};

}  // namespace zt
