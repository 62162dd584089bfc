// CopyStreams: per-direction copy streams with ticketed completion events.
#include "kernels/cuda/copy_streams.h"

#include "base/cuda_check.h"

namespace zt::cuda {

CopyStreams::CopyStreams(cudaStream_t compute) : compute_(compute) {
  for (auto& s : stream_) ZT_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  ZT_CUDA_CHECK(cudaEventCreateWithFlags(&compute_mark_, cudaEventDisableTiming));
}

CopyStreams::~CopyStreams() {
  for (int d = 0; d < 2; ++d) {
    if (stream_[d]) cudaStreamSynchronize(stream_[d]);
    for (auto& p : pending_[d]) cudaEventDestroy(p.done);
    if (stream_[d]) cudaStreamDestroy(stream_[d]);
  }
  for (auto e : free_events_) cudaEventDestroy(e);
  if (compute_mark_) cudaEventDestroy(compute_mark_);
}

cudaEvent_t CopyStreams::take_event() {
  if (!free_events_.empty()) {
    cudaEvent_t e = free_events_.back();
    free_events_.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  ZT_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return e;
}

uint64_t CopyStreams::issue(int dir, void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  // The copy waits for the compute stream's work so far (a gradient's last kernel, say).
  ZT_CUDA_CHECK(cudaEventRecord(compute_mark_, compute_));
  ZT_CUDA_CHECK(cudaStreamWaitEvent(stream_[dir], compute_mark_, 0));
  if (bytes) ZT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, stream_[dir]));
  cudaEvent_t done = take_event();
  ZT_CUDA_CHECK(cudaEventRecord(done, stream_[dir]));
  pending_[dir].push_back({++next_ticket_, done});
  return next_ticket_;
}

uint64_t CopyStreams::to_host(void* host_dst, const void* src, size_t bytes) {
  return issue(0, host_dst, src, bytes, cudaMemcpyDeviceToHost);
}

uint64_t CopyStreams::to_device(void* dst, const void* host_src, size_t bytes) {
  return issue(1, dst, host_src, bytes, cudaMemcpyHostToDevice);
}

void CopyStreams::retire_through(int dir, uint64_t ticket) {
  auto& q = pending_[dir];
  while (!q.empty() && q.front().ticket <= ticket) {
    free_events_.push_back(q.front().done);
    q.pop_front();
  }
}

void CopyStreams::wait(uint64_t ticket) {
  for (int d = 0; d < 2; ++d)
    for (const auto& p : pending_[d])
      if (p.ticket == ticket) {
        ZT_CUDA_CHECK(cudaEventSynchronize(p.done));
        ZT_CUDA_CHECK(cudaStreamWaitEvent(compute_, p.done, 0));
        retire_through(d, ticket);  // copies on one stream complete in order
        return;
      }
}

void CopyStreams::synchronize() {
  for (int d = 0; d < 2; ++d) {
    ZT_CUDA_CHECK(cudaStreamSynchronize(stream_[d]));
    retire_through(d, next_ticket_);
  }
}

}  // namespace zt::cuda
