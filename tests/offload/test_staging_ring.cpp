// The staging ring on the CPU backend, whose copy lane is a real thread: chunks streamed out arrive
// intact and in order with every slot count, published chunks land where they were sent, a slot is
// never refilled while its copy runs, and misuse is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

#include "kernels/backend.h"
#include "offload/staging_ring.h"

namespace zt::offload {
namespace {

PinnedAllocatorOptions unpinned() {
  PinnedAllocatorOptions o;
  o.pin_memory = false;  // the ring's logic does not depend on locking pages
  return o;
}

struct Fixture {
  std::unique_ptr<Backend> backend = make_cpu_backend();
  PinnedAllocator alloc{unpinned()};
};

std::vector<uint32_t> random_words(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint32_t> v(n);
  for (auto& x : v) x = rng();
  return v;
}

TEST(StagingRing, StreamOutDeliversEveryChunkInOrder) {
  Fixture f;
  const size_t n = 100003, chunk = 1000;  // the last chunk is short
  const auto src = random_words(n, 7);
  void* dev = f.backend->alloc(n * 4);
  f.backend->copy_to_device(dev, src.data(), n * 4);
  for (int slots : {2, 3, 8}) {
    StagingRing ring(*f.backend, f.alloc, slots, chunk * 4);
    std::vector<uint32_t> got(n, 0);
    std::vector<size_t> order;
    const size_t K = (n + chunk - 1) / chunk;
    ring.stream_out(
        K,
        [&](size_t k) {
          const size_t len = std::min(chunk, n - k * chunk);
          return std::pair<const void*, size_t>(static_cast<const char*>(dev) + k * chunk * 4, len * 4);
        },
        [&](size_t k, const void* data, size_t bytes) {
          order.push_back(k);
          std::memcpy(got.data() + k * chunk, data, bytes);
        });
    EXPECT_EQ(got, src) << slots << " slots";
    std::vector<size_t> expect(K);
    std::iota(expect.begin(), expect.end(), 0);
    EXPECT_EQ(order, expect);
  }
  f.backend->free(dev);
}

TEST(StagingRing, PublishLandsEveryChunkAndReusesSlotsSafely) {
  Fixture f;
  const size_t n = 50001, chunk = 777;
  const auto src = random_words(n, 11);
  void* dev = f.backend->alloc(n * 4);
  f.backend->zero(dev, n * 4);
  StagingRing ring(*f.backend, f.alloc, 2, chunk * 4);
  for (size_t off = 0; off < n; off += chunk) {
    const size_t len = std::min(chunk, n - off);
    // Each fill overwrites a slot whose previous copy must already be done, or the destination
    // of that earlier copy would receive these words instead.
    ring.publish(static_cast<char*>(dev) + off * 4, len * 4,
                 [&](void* slot) { std::memcpy(slot, src.data() + off, len * 4); });
  }
  ring.drain();
  std::vector<uint32_t> got(n);
  f.backend->copy_to_host(got.data(), dev, n * 4);
  EXPECT_EQ(got, src);
  f.backend->free(dev);
}

TEST(StagingRing, RefusesTooFewSlotsAndOversizedChunks) {
  Fixture f;
  EXPECT_THROW(StagingRing(*f.backend, f.alloc, 1, 64), std::invalid_argument);
  StagingRing ring(*f.backend, f.alloc, 2, 64);
  std::vector<char> dev(128);
  EXPECT_THROW(ring.publish(dev.data(), 65, [](void*) {}), std::logic_error);
  EXPECT_THROW(ring.stream_out(
                   1, [&](size_t) { return std::pair<const void*, size_t>(dev.data(), 128); },
                   [](size_t, const void*, size_t) {}),
               std::logic_error);
}

TEST(CpuCopyLane, TicketsCompleteInOrderAndSynchronizeDrains) {
  auto backend = make_cpu_backend();
  const size_t n = 1 << 20;
  std::vector<uint8_t> a(n, 1), b(n, 0), c(n, 0);
  const auto t1 = backend->copy_to_device_async(b.data(), a.data(), n);
  const auto t2 = backend->copy_to_host_async(c.data(), b.data(), n);  // after t1: sees its bytes
  EXPECT_LT(t1, t2);
  backend->wait_copy(t2);
  EXPECT_EQ(c, a) << "waiting for a later ticket covers the earlier copy";
  std::fill(a.begin(), a.end(), 2);
  backend->copy_to_device_async(b.data(), a.data(), n);
  backend->synchronize();
  EXPECT_EQ(b, a);
}

}  // namespace
}  // namespace zt::offload
