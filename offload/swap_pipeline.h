// SwapPipeline: walks an NvmeSwapper's sub-groups with buffer_count buffers so that reading
// sub-group k+1, the caller's step on k and writing k-1 back overlap.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "offload/nvme_swapper.h"
#include "offload/pinned_memory.h"

namespace zt::offload {

class SwapPipeline {
 public:
  // step(k, data, bytes): data holds sub-group k as read from the file (bytes = swapper.bytes(k));
  // what the step leaves there is written back.
  using StepFn = std::function<void(size_t k, void* data, size_t bytes)>;

  // buffer_count >= 1 (1 = no overlap: read, step, write in turn). Buffers come from `alloc`.
  SwapPipeline(NvmeSwapper& swapper, int buffer_count, PinnedAllocator& alloc);

  // One pass over sub-groups 0..K-1. With B buffers, up to max(1, B-2) reads run ahead of the
  // step while earlier writes drain. On any failure (I/O or a throwing step) every transfer still
  // in flight is drained before the exception propagates.
  void run(const StepFn& step);

  // Writes initial contents: fill(k, data, bytes) fills sub-group k, which is then written.
  void initialize(const StepFn& fill);

  int buffer_count() const { return static_cast<int>(buffers_.size()); }

 private:
  void drain(std::vector<AioHandle>& handles) noexcept;
  NvmeSwapper& swapper_;
  std::vector<PinnedBuffer> buffers_;
};

}  // namespace zt::offload
