// Large host buffers on huge pages where the kernel grants them (host_pages.h).
#include "base/host_pages.h"

#include <fstream>
#include <iterator>
#include <new>
#include <sstream>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace zt {

void* alloc_host_pages(size_t bytes) {
  const size_t rounded = bytes == 0 ? kHostPageBytes : (bytes + kHostPageBytes - 1) / kHostPageBytes * kHostPageBytes;
  const bool huge = rounded >= kHugePageBytes;
  // posix_memalign, not aligned_alloc: the size need not be a multiple of the alignment (the tail
  // past the last whole huge page stays a few 4 KiB pages), which aligned_alloc's contract asks for.
  void* p = nullptr;
  if (::posix_memalign(&p, huge ? kHugePageBytes : kHostPageBytes, rounded) != 0 || !p) throw std::bad_alloc();
#if defined(MADV_HUGEPAGE)
  // Only the whole huge pages inside the buffer: its tail stays on 4 KiB pages, so no buffer holds
  // more memory than it asked for. Advice, not a request that can fail: where the kernel refuses
  // (mode "never", no THP support) the buffer stays on 4 KiB pages.
  if (huge) (void)madvise(p, rounded / kHugePageBytes * kHugePageBytes, MADV_HUGEPAGE);
#endif
  return p;
}

std::string huge_pages_mode_from(const std::string& text) {
  const size_t a = text.find('['), b = text.find(']', a == std::string::npos ? 0 : a);
  if (a == std::string::npos || b == std::string::npos || b <= a + 1) return "unknown";
  return text.substr(a + 1, b - a - 1);
}

std::string effective_huge_pages_mode(const std::string& top, const std::string& size_2m) {
  return size_2m == "inherit" || size_2m == "unknown" ? top : size_2m;
}

namespace {
std::string bracketed_word_of(const char* path) {
  std::ifstream in(path);
  if (!in) return "unknown";
  return huge_pages_mode_from(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
}
}  // namespace

std::string huge_pages_mode() {
  return effective_huge_pages_mode(bracketed_word_of("/sys/kernel/mm/transparent_hugepage/enabled"),
                                   bracketed_word_of("/sys/kernel/mm/transparent_hugepage/hugepages-2048kB/enabled"));
}

uint64_t huge_page_bytes_from(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("AnonHugePages:", 0) != 0) continue;
    std::istringstream f(line.substr(14));
    uint64_t kib = 0;
    std::string unit;
    if (f >> kib >> unit && unit == "kB") return kib * 1024;
    return 0;
  }
  return 0;
}

uint64_t process_huge_page_bytes() {
  std::ifstream in("/proc/self/smaps_rollup");
  if (!in) return 0;
  return huge_page_bytes_from(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
}

}  // namespace zt
