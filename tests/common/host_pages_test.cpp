// Large host buffers (base/host_pages.h): alignment and rounding by size, and the two /proc and
// /sys readings the benches and `zerotrain env` print.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "base/host_pages.h"

namespace {

uintptr_t addr(const void* p) { return reinterpret_cast<uintptr_t>(p); }

TEST(HostPages, SmallBuffersArePageAlignedAndLargeOnesHugePageAligned) {
  for (size_t bytes : {size_t(0), size_t(1), size_t(4095), size_t(4096), size_t(1) << 20, zt::kHugePageBytes - 1}) {
    zt::HostPages p = zt::make_host_pages(bytes);
    ASSERT_NE(p.get(), nullptr) << bytes;
    EXPECT_EQ(addr(p.get()) % zt::kHostPageBytes, 0u) << bytes;
    // Every byte of the rounded size is usable (the sanitizer job checks the bounds).
    std::memset(p.get(), 0x5a, bytes == 0 ? zt::kHostPageBytes : (bytes + 4095) / 4096 * 4096);
  }
  for (size_t bytes : {zt::kHugePageBytes, zt::kHugePageBytes + 1, (size_t(5) << 20) + 123}) {
    zt::HostPages p = zt::make_host_pages(bytes);
    EXPECT_EQ(addr(p.get()) % zt::kHugePageBytes, 0u) << bytes;
    std::memset(p.get(), 0x5a, (bytes + 4095) / 4096 * 4096);
    EXPECT_EQ(static_cast<unsigned char>(p.get()[bytes - 1]), 0x5au);
  }
}

TEST(HostPages, ReadsTheKernelsModeAndTheProcessHugePages) {
  EXPECT_EQ(zt::huge_pages_mode_from("always [madvise] never\n"), "madvise");
  EXPECT_EQ(zt::huge_pages_mode_from("[always] madvise never"), "always");
  EXPECT_EQ(zt::huge_pages_mode_from("always madvise [never]"), "never");
  EXPECT_EQ(zt::huge_pages_mode_from("always madvise never"), "unknown");
  EXPECT_EQ(zt::huge_pages_mode_from("[]"), "unknown");
  EXPECT_EQ(zt::huge_pages_mode_from(""), "unknown");
  const std::string mode = zt::huge_pages_mode();
  EXPECT_TRUE(mode == "always" || mode == "madvise" || mode == "never" || mode == "unknown") << mode;

  EXPECT_EQ(zt::huge_page_bytes_from("Rss:  1000 kB\nAnonHugePages:    4096 kB\nShmemPmdMapped: 0 kB\n"), 4096u * 1024);
  EXPECT_EQ(zt::huge_page_bytes_from("AnonHugePages:        0 kB\n"), 0u);
  EXPECT_EQ(zt::huge_page_bytes_from("Rss: 1000 kB\n"), 0u);
  EXPECT_EQ(zt::huge_page_bytes_from("AnonHugePages: lots\n"), 0u);
}

// Where the kernel grants huge pages to buffers that ask (mode "madvise" or "always"), a touched
// 8 MiB buffer shows up in the process's AnonHugePages; elsewhere nothing is asserted.
TEST(HostPages, TheKernelGrantsHugePagesWhereItsModeAllows) {
  const std::string mode = zt::huge_pages_mode();
  if (mode != "madvise" && mode != "always") GTEST_SKIP() << "transparent huge pages are " << mode << " here";
  const uint64_t before = zt::process_huge_page_bytes();
  zt::HostPages p = zt::make_host_pages(size_t(8) << 20);
  std::memset(p.get(), 1, size_t(8) << 20);
  const uint64_t after = zt::process_huge_page_bytes();
  // Under memory pressure or fragmentation the kernel may fall back to 4 KiB pages on a fault;
  // one huge page of four is the least a quiet machine gives.
  EXPECT_GE(after, before + zt::kHugePageBytes) << "mode " << mode << ": no huge page was granted to 8 MiB that asked";
}

}  // namespace
