// Tests for the pinned host allocator: page alignment, pinning when allowed, the single-warning
// fallback when mlock is refused, errors otherwise, and RAII moves.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "offload/pinned_memory.h"

namespace zt::offload {
namespace {

TEST(Pinned, PageAlignedAndUsable) {
  PinnedAllocator alloc({.pin_memory = false, .use_cuda = false, .warn = {}, .lock_fn = {}});
  const size_t page = host_page_size();
  for (size_t bytes : {size_t(1), page - 1, page, page + 1, size_t(3) << 20}) {
    PinnedBuffer b = alloc.allocate(bytes);
    ASSERT_NE(b.data(), nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % page, 0u) << bytes;
    EXPECT_EQ(b.size(), bytes);
    EXPECT_EQ(b.capacity() % page, 0u);
    EXPECT_GE(b.capacity(), bytes);
    EXPECT_EQ(b.kind(), PinKind::Pageable);
    std::memset(b.data(), 0xAB, b.capacity());
  }
  EXPECT_EQ(alloc.allocate(0).data(), nullptr);
}

TEST(Pinned, PinsWithMlockOrFallsBackWithAWarning) {
  std::vector<std::string> warnings;
  PinnedAllocator alloc({.pin_memory = true, .use_cuda = false,
                         .warn = [&](const std::string& s) { warnings.push_back(s); }, .lock_fn = {}});
  PinnedBuffer b = alloc.allocate(1 << 16);
  ASSERT_NE(b.data(), nullptr);
  if (b.kind() == PinKind::Mlocked) {
    EXPECT_TRUE(warnings.empty());
  } else {  // an unprivileged user with a small RLIMIT_MEMLOCK
    EXPECT_EQ(b.kind(), PinKind::Pageable);
    EXPECT_EQ(warnings.size(), 1u);
  }
}

TEST(Pinned, RefusedMlockFallsBackWithOneWarning) {
  for (int err : {ENOMEM, EPERM}) {
    std::vector<std::string> warnings;
    int calls = 0;
    PinnedAllocator alloc({.pin_memory = true, .use_cuda = false,
                           .warn = [&](const std::string& s) { warnings.push_back(s); },
                           .lock_fn = [&](const void*, size_t) { ++calls; errno = err; return -1; }});
    PinnedBuffer a = alloc.allocate(100);
    PinnedBuffer b = alloc.allocate(5000);
    EXPECT_EQ(calls, 2);
    EXPECT_EQ(a.kind(), PinKind::Pageable);
    EXPECT_EQ(b.kind(), PinKind::Pageable);
    ASSERT_NE(a.data(), nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % host_page_size(), 0u);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_TRUE(alloc.warned());
    EXPECT_NE(warnings[0].find("RLIMIT_MEMLOCK"), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find(std::strerror(err)), std::string::npos) << warnings[0];
  }
}

TEST(Pinned, OtherMlockFailuresThrow) {
  PinnedAllocator alloc({.pin_memory = true, .use_cuda = false, .warn = {},
                         .lock_fn = [](const void*, size_t) { errno = EINVAL; return -1; }});
  try {
    alloc.allocate(4096);
    FAIL() << "mlock EINVAL was ignored";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(std::strerror(EINVAL)), std::string::npos) << e.what();
  }
}

TEST(Pinned, MoveTransfersOwnership) {
  PinnedAllocator alloc({.pin_memory = false, .use_cuda = false, .warn = {}, .lock_fn = {}});
  PinnedBuffer a = alloc.allocate(10000);
  void* p = a.data();
  PinnedBuffer b = std::move(a);
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(b.data(), p);
  PinnedBuffer c = alloc.allocate(10);
  c = std::move(b);
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c.size(), 10000u);
}

}  // namespace
}  // namespace zt::offload
