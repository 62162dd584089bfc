// StagingRing: round-robin pinned slots with per-slot transfer tickets.
#include "offload/staging_ring.h"

#include <stdexcept>
#include <string>

namespace zt::offload {

StagingRing::StagingRing(Backend& backend, PinnedAllocator& alloc, int count, size_t slot_bytes)
    : backend_(backend), slot_bytes_(slot_bytes) {
  if (count < 2) throw std::invalid_argument("StagingRing: " + std::to_string(count) + " slots; need at least 2");
  if (slot_bytes == 0) throw std::invalid_argument("StagingRing: slot size 0");
  for (int i = 0; i < count; ++i) slots_.push_back({alloc.allocate(slot_bytes), 0});
}

StagingRing::~StagingRing() {
  try {
    drain();
  } catch (...) {  // a failing transfer was already reported by whoever waited first
  }
}

StagingRing::Slot& StagingRing::take(size_t i) {
  Slot& s = slots_[i];
  if (s.ticket) backend_.wait_copy(s.ticket);
  s.ticket = 0;
  return s;
}

void StagingRing::stream_out(size_t K, const SourceFn& source, const ConsumeFn& consume) {
  const size_t B = slots_.size();
  std::vector<size_t> bytes(B, 0);
  auto issue = [&](size_t k) {
    Slot& s = take(k % B);
    const auto [src, n] = source(k);
    if (n > slot_bytes_)
      throw std::logic_error("StagingRing::stream_out: chunk of " + std::to_string(n) + " bytes > slot of " +
                             std::to_string(slot_bytes_));
    bytes[k % B] = n;
    s.ticket = backend_.copy_to_host_async(s.buf.data(), src, n);
  };
  for (size_t k = 0; k < std::min(K, B); ++k) issue(k);
  for (size_t k = 0; k < K; ++k) {
    Slot& s = take(k % B);
    consume(k, s.buf.data(), bytes[k % B]);
    if (k + B < K) issue(k + B);
  }
}

Backend::CopyTicket StagingRing::publish(void* dst, size_t bytes, const std::function<void(void*)>& fill) {
  if (bytes > slot_bytes_)
    throw std::logic_error("StagingRing::publish: " + std::to_string(bytes) + " bytes > slot of " +
                           std::to_string(slot_bytes_));
  Slot& s = take(next_);
  next_ = (next_ + 1) % slots_.size();
  fill(s.buf.data());
  s.ticket = backend_.copy_to_device_async(dst, s.buf.data(), bytes);
  return s.ticket;
}

void StagingRing::drain() {
  for (size_t i = 0; i < slots_.size(); ++i) take(i);
}

uint64_t StagingRing::bytes_allocated() const {
  uint64_t b = 0;
  for (const auto& s : slots_) b += s.buf.capacity();
  return b;
}

}  // namespace zt::offload
