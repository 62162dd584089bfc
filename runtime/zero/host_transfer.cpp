// HostTransfer: chunked, overlapped copies through the staging ring.
#include "runtime/zero/host_transfer.h"

#include <algorithm>
#include <cstring>

namespace zt {

HostTransfer::HostTransfer(ZeroContext& z, offload::PinnedAllocator& pinned, int buffer_count, int64_t chunk_elems,
                           int64_t largest_range)
    : z_(z), chunk_(std::max<int64_t>(1, std::min(chunk_elems, largest_range))) {
  ring_ = std::make_unique<offload::StagingRing>(z.backend, pinned, std::max(2, buffer_count), size_t(chunk_) * z.element_bytes());
  z.ledger.record_host(MemCategory::CommBuffers, ring_->bytes_allocated());
  published_.assign(size_t(z.part.units()), 0);
}

void HostTransfer::copy_out(const std::vector<Out>& ranges) {
  struct Chunk {
    size_t range;
    int64_t begin, n;
  };
  std::vector<Chunk> chunks;
  for (size_t r = 0; r < ranges.size(); ++r)
    for (int64_t b = 0; b < ranges[r].n; b += chunk_) chunks.push_back({r, b, std::min(chunk_, ranges[r].n - b)});
  if (chunks.empty()) return;
  const size_t es = z_.element_bytes();
  const bool bf16 = z_.working_type() == DType::BF16;
  ring_->stream_out(
      chunks.size(),
      [&](size_t k) {
        const Chunk& c = chunks[k];
        grad_bytes_out_ += uint64_t(c.n) * es;
        return std::pair<const void*, size_t>(static_cast<const char*>(ranges[c.range].src) + size_t(c.begin) * es,
                                              size_t(c.n) * es);
      },
      [&](size_t k, const void* data, size_t) {
        const Chunk& c = chunks[k];
        float* dst = ranges[c.range].dst + c.begin;
        if (!bf16) {
          std::memcpy(dst, data, size_t(c.n) * 4);
          return;
        }
        const uint16_t* h = static_cast<const uint16_t*>(data);
        for (int64_t i = 0; i < c.n; ++i) dst[i] = bf16_bits_to_f32(h[i]);
      });
}

void HostTransfer::publish(int u, void* dst, int64_t n,
                           const std::function<void(void* slot, int64_t first, int64_t len)>& fill) {
  for (int64_t off = 0; off < n; off += chunk_) {
    const int64_t len = std::min(chunk_, n - off);
    published_[size_t(u)] =
        ring_->publish(z_.element_at(dst, off), size_t(len) * z_.element_bytes(), [&](void* slot) { fill(slot, off, len); });
  }
}

void HostTransfer::wait_unit(int u) { z_.backend.wait_copy(published_[size_t(u)]); }

void HostTransfer::drain() { ring_->drain(); }

}  // namespace zt
