// Pinned host memory: aligned_alloc + mlock on CPU builds, cudaHostAlloc on CUDA builds with a GPU.
#include "offload/pinned_memory.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

#include "base/host_pages.h"

#if ZT_HAVE_CUDA
#include "base/cuda_check.h"
#endif

namespace zt::offload {

const char* pin_kind_name(PinKind k) {
  switch (k) {
    case PinKind::Pageable: return "pageable";
    case PinKind::Mlocked: return "mlocked";
    case PinKind::CudaHost: return "cuda_host";
  }
  return "?";
}

size_t host_page_size() {
  const long ps = sysconf(_SC_PAGESIZE);
  return ps > 0 ? static_cast<size_t>(ps) : 4096;
}

PinnedBuffer::~PinnedBuffer() { release(); }

PinnedBuffer::PinnedBuffer(PinnedBuffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      capacity_(std::exchange(o.capacity_, 0)),
      kind_(std::exchange(o.kind_, PinKind::Pageable)) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& o) noexcept {
  if (this != &o) {
    release();
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    capacity_ = std::exchange(o.capacity_, 0);
    kind_ = std::exchange(o.kind_, PinKind::Pageable);
  }
  return *this;
}

void PinnedBuffer::release() noexcept {
  if (!data_) return;
#if ZT_HAVE_CUDA
  if (kind_ == PinKind::CudaHost) {
    cudaFreeHost(data_);  // errors here cannot be acted on in a destructor
    data_ = nullptr;
    return;
  }
#endif
  if (kind_ == PinKind::Mlocked) munlock(data_, capacity_);
  std::free(data_);
  data_ = nullptr;
}

namespace {

#if ZT_HAVE_CUDA
bool cuda_gpu_present() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;  // no driver / no GPU: host path
}
#endif

std::string memlock_limit_text() {
  rlimit rl{};
  if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0) return "unknown";
  if (rl.rlim_cur == RLIM_INFINITY) return "unlimited";
  return std::to_string(rl.rlim_cur / 1024) + " KiB";
}

}  // namespace

PinnedAllocator::PinnedAllocator(PinnedAllocatorOptions opt) : opt_(std::move(opt)) {
  if (!opt_.warn) opt_.warn = [](const std::string& s) { std::fprintf(stderr, "warning: %s\n", s.c_str()); };
  if (!opt_.lock_fn) opt_.lock_fn = [](const void* p, size_t n) { return ::mlock(p, n); };
#if ZT_HAVE_CUDA
  cuda_active_ = opt_.pin_memory && opt_.use_cuda && cuda_gpu_present();
#endif
}

PinnedBuffer PinnedAllocator::allocate(size_t bytes) {
  PinnedBuffer b;
  if (bytes == 0) return b;
  const size_t page = host_page_size();
  const size_t cap = (bytes + page - 1) / page * page;
#if ZT_HAVE_CUDA
  if (cuda_active_) {
    void* p = nullptr;
    ZT_CUDA_CHECK(cudaHostAlloc(&p, cap, cudaHostAllocPortable),
                          "pinned host memory exhausted: lower buffer sizes or set pin_memory false");
    b.data_ = p;
    b.size_ = bytes;
    b.capacity_ = cap;
    b.kind_ = PinKind::CudaHost;
    return b;
  }
#endif
  void* p = nullptr;
  try {
    p = alloc_host_pages(cap);  // huge pages from 2 MiB: each DMA pins fewer pages
  } catch (const std::bad_alloc&) {
    throw std::runtime_error("pinned allocator: cannot allocate " + std::to_string(cap) +
                             " bytes of host memory: " + std::strerror(ENOMEM));
  }
  b.data_ = p;
  b.size_ = bytes;
  b.capacity_ = cap;
  b.kind_ = PinKind::Pageable;
  if (!opt_.pin_memory) return b;
  errno = 0;
  if (opt_.lock_fn(p, cap) == 0) {
    b.kind_ = PinKind::Mlocked;
    return b;
  }
  const int err = errno;
  if (err == ENOMEM || err == EPERM || err == EAGAIN) {
    if (!warned_) {
      warned_ = true;
      opt_.warn("pin_memory: mlock failed (" + std::string(std::strerror(err)) +
                "; RLIMIT_MEMLOCK = " + memlock_limit_text() +
                "); using pageable memory, so host<->device copies are slower. Fix: raise the limit "
                "(ulimit -l unlimited) or set pin_memory false");
    }
    return b;
  }
  throw std::runtime_error("pinned allocator: mlock of " + std::to_string(cap) +
                           " bytes failed: " + std::strerror(err));
}

}  // namespace zt::offload
