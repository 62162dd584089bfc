// SwapPipeline: the read-ahead / step / write-behind schedule over B buffers (sub-group k uses
// buffer k mod B; a buffer is re-read only after its previous write finished).
#include "offload/swap_pipeline.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace zt::offload {

SwapPipeline::SwapPipeline(NvmeSwapper& swapper, int buffer_count, PinnedAllocator& alloc) : swapper_(swapper) {
  if (buffer_count < 1)
    throw std::invalid_argument("buffer_count = " + std::to_string(buffer_count) + ": must be at least 1");
  const size_t bytes = std::max<size_t>(swapper_.max_padded_bytes(), kDirectIoAlignment);
  const size_t K = swapper_.num_subgroups();
  const size_t useful = std::max<size_t>(1, std::min<size_t>(static_cast<size_t>(buffer_count), K));
  for (size_t i = 0; i < useful; ++i) buffers_.push_back(alloc.allocate(bytes));
}

void SwapPipeline::drain(std::vector<AioHandle>& handles) noexcept {
  for (auto& h : handles) {
    if (!h) continue;
    try {
      swapper_.wait(h);
    } catch (...) {
    }
    h.reset();
  }
}

void SwapPipeline::initialize(const StepFn& fill) {
  const size_t K = swapper_.num_subgroups(), B = buffers_.size();
  std::vector<AioHandle> wr(K);
  try {
    for (size_t k = 0; k < K; ++k) {
      if (k >= B) {
        swapper_.wait(wr[k - B]);
        wr[k - B].reset();
      }
      void* data = buffers_[k % B].data();
      fill(k, data, swapper_.bytes(k));
      wr[k] = swapper_.write(k, data);
    }
    for (auto& h : wr)
      if (h) swapper_.wait(h);
  } catch (...) {
    drain(wr);
    throw;
  }
}

void SwapPipeline::run(const StepFn& step) {
  const size_t K = swapper_.num_subgroups(), B = buffers_.size();
  if (K == 0) return;
  const size_t ahead = B >= 2 ? std::max<size_t>(1, B - 2) : 0;
  std::vector<AioHandle> rd(K), wr(K);
  size_t next_read = 0;  // first sub-group whose read has not been issued
  auto issue_reads_up_to = [&](size_t last) {
    for (; next_read <= last && next_read < K; ++next_read) {
      if (next_read >= B) {  // its buffer last held sub-group next_read - B: that write must be done
        swapper_.wait(wr[next_read - B]);
        wr[next_read - B].reset();
      }
      rd[next_read] = swapper_.read(next_read, buffers_[next_read % B].data());
    }
  };
  try {
    for (size_t k = 0; k < K; ++k) {
      issue_reads_up_to(k + ahead);
      swapper_.wait(rd[k]);
      rd[k].reset();
      void* data = buffers_[k % B].data();
      step(k, data, swapper_.bytes(k));
      wr[k] = swapper_.write(k, data);
    }
    for (auto& h : wr) {
      if (h) swapper_.wait(h);
      h.reset();
    }
  } catch (...) {
    drain(rd);
    drain(wr);
    throw;
  }
}

}  // namespace zt::offload
