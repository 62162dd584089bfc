// Large host buffers: page-aligned, and from 2 MiB up aligned to a huge page and marked for
// transparent huge pages (madvise MADV_HUGEPAGE), which the kernel grants where its mode is
// "madvise" or "always" and ignores where it is "never".
//
// Why: an O_DIRECT transfer into 4 KiB pages is one DMA segment and one pinned page per 4 KiB, so
// the block layer cuts it into requests of at most the device's max_segments pages (254 x 4 KiB on
// the development guest's virtio disk); into huge pages a request reaches max_sectors_kb (4 MiB)
// and the kernel pins 512 times fewer pages. There an O_DIRECT read of 256 MiB landed at
// 1.1-2.2 GB/s in 4 KiB pages and 2.1-4.3 GB/s in huge pages, alternating (bench/RESULTS.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

namespace zt {

inline constexpr size_t kHostPageBytes = 4096;
inline constexpr size_t kHugePageBytes = size_t(2) << 20;

// `bytes` rounded up to the page (at least one page), aligned to 4 KiB, or from kHugePageBytes up
// aligned to 2 MiB with its whole huge pages marked (the tail stays on 4 KiB pages, so nothing is
// held beyond the rounded size). The memory is not touched. Release with std::free. Throws
// std::bad_alloc.
void* alloc_host_pages(size_t bytes);

struct HostPagesFree {
  void operator()(void* p) const { std::free(p); }
};
using HostPages = std::unique_ptr<char, HostPagesFree>;
inline HostPages make_host_pages(size_t bytes) { return HostPages(static_cast<char*>(alloc_host_pages(bytes))); }

// The kernel's transparent-huge-page mode for 2 MiB pages: "always", "madvise" (granted to the
// buffers above), "never", or "unknown" (no such file). /sys/kernel/mm/transparent_hugepage/enabled
// sets it, unless hugepages-2048kB/enabled there (kernels with several THP sizes) names another
// mode than "inherit".
std::string huge_pages_mode();

// That mode from the two files' bracketed words: the 2 MiB size's own unless it is "inherit" or
// absent ("unknown"), else the top-level one.
std::string effective_huge_pages_mode(const std::string& top, const std::string& size_2m);

// The mode named in that file's text (the bracketed word), or "unknown".
std::string huge_pages_mode_from(const std::string& text);

// Bytes of this process's anonymous memory the kernel holds on huge pages now (AnonHugePages in
// /proc/self/smaps_rollup): what a bench prints beside its figures, since the mode alone does not
// say whether the kernel granted any. 0 where the file is missing.
uint64_t process_huge_page_bytes();

// The AnonHugePages figure of smaps_rollup's text ("AnonHugePages:  4096 kB"), in bytes; 0 without one.
uint64_t huge_page_bytes_from(const std::string& text);

}  // namespace zt
