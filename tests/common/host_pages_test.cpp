// Large host buffers (base/host_pages.h): alignment and rounding by size, and the two /proc and
// /sys readings the benches and `zerotrain env` print.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

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
  // Kernels with several THP sizes: the 2 MiB size's own setting wins unless it inherits.
  EXPECT_EQ(zt::effective_huge_pages_mode("madvise", "inherit"), "madvise");
  EXPECT_EQ(zt::effective_huge_pages_mode("madvise", "unknown"), "madvise");
  EXPECT_EQ(zt::effective_huge_pages_mode("madvise", "never"), "never");
  EXPECT_EQ(zt::effective_huge_pages_mode("never", "always"), "always");
  const std::string mode = zt::huge_pages_mode();
  EXPECT_TRUE(mode == "always" || mode == "madvise" || mode == "never" || mode == "unknown") << mode;

  EXPECT_EQ(zt::huge_page_bytes_from("Rss:  1000 kB\nAnonHugePages:    4096 kB\nShmemPmdMapped: 0 kB\n"), 4096u * 1024);
  EXPECT_EQ(zt::huge_page_bytes_from("AnonHugePages:        0 kB\n"), 0u);
  EXPECT_EQ(zt::huge_page_bytes_from("Rss: 1000 kB\n"), 0u);
  EXPECT_EQ(zt::huge_page_bytes_from("AnonHugePages: lots\n"), 0u);
}

// The VmFlags line of the mapping in /proc/self/smaps that holds `p` ("" if none is found).
std::string vm_flags_of(const void* p) {
  std::ifstream in("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-' && line.find(':') > line.find(' ')) {
      inside = addr(p) >= lo && addr(p) < hi;  // a mapping's header line: "lo-hi perms offset dev inode path"
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return "";
}

// A buffer of 2 MiB and more asks for huge pages: its mapping carries the kernel's "hg" flag
// (MADV_HUGEPAGE), deterministically, where the kernel has THP at all; a smaller one does not ask.
// Whether the kernel then grants them (a touched buffer in AnonHugePages) depends on its mode and
// on free memory, so that is printed, not asserted.
TEST(HostPages, LargeBuffersAskForHugePages) {
  const std::string mode = zt::huge_pages_mode();
  if (mode == "unknown") GTEST_SKIP() << "no transparent huge pages in this kernel";
  const uint64_t before = zt::process_huge_page_bytes();
  zt::HostPages big = zt::make_host_pages(size_t(8) << 20);
  std::memset(big.get(), 1, size_t(8) << 20);
  const std::string flags = vm_flags_of(big.get());
  ASSERT_FALSE(flags.empty()) << "no mapping in /proc/self/smaps holds the buffer";
  EXPECT_NE((flags + " ").find(" hg "), std::string::npos) << flags;
  const uint64_t after = zt::process_huge_page_bytes();
  std::printf("transparent huge pages: %s; a touched 8 MiB buffer that asked got %llu KiB of huge pages\n", mode.c_str(),
              (unsigned long long)((after > before ? after - before : 0) / 1024));
}

}  // namespace
