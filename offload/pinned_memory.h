// Pinned host memory: page-aligned buffers, mlock'ed (or cudaHostAlloc'ed on a CUDA build with a
// GPU) when pin_memory is set, falling back to pageable memory with one warning per allocator.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace zt::offload {

enum class PinKind { Pageable, Mlocked, CudaHost };
const char* pin_kind_name(PinKind k);

// An owned, page-aligned host buffer (RAII, move-only). size() is what was asked for; the
// allocation is rounded up to whole pages (capacity()).
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& o) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  void* data() const { return data_; }
  template <class T>
  T* as() const { return static_cast<T*>(data_); }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  PinKind kind() const { return kind_; }
  bool pinned() const { return kind_ != PinKind::Pageable; }

 private:
  friend class PinnedAllocator;
  void release() noexcept;
  void* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
  PinKind kind_ = PinKind::Pageable;
};

struct PinnedAllocatorOptions {
  bool pin_memory = true;
  bool use_cuda = true;  // cudaHostAlloc when this is a CUDA build and a GPU is present
  // Where the single fallback warning goes (default: stderr).
  std::function<void(const std::string&)> warn;
  // Test hook: replaces ::mlock (same contract: 0 or -1 with errno set).
  std::function<int(const void*, size_t)> lock_fn;
};

// Hands out PinnedBuffers. If mlock fails with ENOMEM or EPERM (RLIMIT_MEMLOCK, no CAP_IPC_LOCK)
// the buffer is returned unpinned and a warning (with the limit and the fix) is issued once per
// allocator; any other failure throws std::runtime_error with the size and errno text.
class PinnedAllocator {
 public:
  explicit PinnedAllocator(PinnedAllocatorOptions opt = {});
  PinnedBuffer allocate(size_t bytes);
  bool warned() const { return warned_; }
  bool cuda_active() const { return cuda_active_; }

 private:
  PinnedAllocatorOptions opt_;
  bool warned_ = false;
  bool cuda_active_ = false;
};

size_t host_page_size();

}  // namespace zt::offload
