// StagingRing: the pinned host buffers through which CPU offload moves data between backend memory
// and the host optimizer, chunk by chunk, so that transfers overlap the host's work:
//   stream_out: copy-out of chunk k+1.. runs while the host consumes chunk k (gradients);
//   publish:    the host fills a slot (the step writes the new working params) and its copy-in runs
//               while the host fills the next one.
// A slot is reused only after the transfer that last used it is complete.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "kernels/backend.h"
#include "offload/pinned_memory.h"

namespace zt::offload {

class StagingRing {
 public:
  // count >= 2 slots of slot_bytes each (count 1 would serialise every transfer with the host work).
  StagingRing(Backend& backend, PinnedAllocator& alloc, int count, size_t slot_bytes);
  ~StagingRing();  // waits for every transfer still using a slot
  StagingRing(const StagingRing&) = delete;
  StagingRing& operator=(const StagingRing&) = delete;

  // Chunk k of K: `source(k)` names backend memory and its size (at most slot_bytes); `consume(k,
  // host_data, bytes)` runs in order k = 0..K-1 once chunk k is on the host. Up to count() copies
  // run ahead of the consumer.
  using SourceFn = std::function<std::pair<const void*, size_t>(size_t k)>;
  using ConsumeFn = std::function<void(size_t k, const void* host_data, size_t bytes)>;
  void stream_out(size_t K, const SourceFn& source, const ConsumeFn& consume);

  // Fills the next free slot (fill(slot, bytes) writes `bytes` <= slot_bytes) and copies it to `dst`
  // in backend memory. Returns the copy's ticket; the copy may still be running on return.
  Backend::CopyTicket publish(void* dst, size_t bytes, const std::function<void(void* slot)>& fill);

  void drain();  // waits for every transfer issued through the ring
  size_t slot_bytes() const { return slot_bytes_; }
  int count() const { return static_cast<int>(slots_.size()); }
  uint64_t bytes_allocated() const;

 private:
  struct Slot {
    PinnedBuffer buf;
    Backend::CopyTicket ticket = 0;  // the last transfer using the slot (0: none pending)
  };
  Slot& take(size_t i);  // slot i after its last transfer finished
  Backend& backend_;
  size_t slot_bytes_;
  std::vector<Slot> slots_;
  size_t next_ = 0;  // publish's round-robin position
};

}  // namespace zt::offload
