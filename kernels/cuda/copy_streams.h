// CopyStreams: the CUDA backend's asynchronous host transfers — one stream per direction (a GPU has
// a copy engine for each), each copy ordered after the compute stream's work issued before it, and
// one completion event per copy behind a ticket.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

namespace zt::cuda {

class CopyStreams {
 public:
  explicit CopyStreams(cudaStream_t compute);
  ~CopyStreams();
  CopyStreams(const CopyStreams&) = delete;
  CopyStreams& operator=(const CopyStreams&) = delete;

  uint64_t to_host(void* host_dst, const void* src, size_t bytes);
  uint64_t to_device(void* dst, const void* host_src, size_t bytes);
  // Blocks until copy `ticket` (and every earlier copy in its direction) is done, and orders the
  // compute stream after it. Unknown or already-retired tickets return at once.
  void wait(uint64_t ticket);
  void synchronize();  // both directions

 private:
  struct Pending {
    uint64_t ticket;
    cudaEvent_t done;
  };
  uint64_t issue(int dir, void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
  cudaEvent_t take_event();
  void retire_through(int dir, uint64_t ticket);
  cudaStream_t compute_;
  cudaStream_t stream_[2] = {nullptr, nullptr};  // 0: device to host, 1: host to device
  std::deque<Pending> pending_[2];
  std::vector<cudaEvent_t> free_events_;
  cudaEvent_t compute_mark_ = nullptr;
  uint64_t next_ticket_ = 0;
};

}  // namespace zt::cuda
