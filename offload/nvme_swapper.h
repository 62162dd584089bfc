// NvmeSwapper: pages sub-groups of optimizer state (or params) to one direct-I/O file per rank
// under nvme_path, created and sized at start and removed at exit; async read/write per sub-group.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "offload/aio_uring.h"
#include "offload/pinned_memory.h"

namespace zt::offload {

struct SwapperConfig {
  std::string nvme_path;  // an existing directory on a local file system
  int rank = 0;
  AioConfig aio;
};

class NvmeSwapper {
 public:
  // Checks the path (exists, is a directory, not a network file system), creates
  // zt_swap_rank<r>_pid<p>_<n>.bin with O_DIRECT and reserves its full size with fallocate.
  // Throws std::runtime_error naming the path, the errno text and the fix when any step fails
  // (missing path, O_DIRECT refused with EINVAL, ENOSPC, ...).
  NvmeSwapper(SwapperConfig config, std::vector<size_t> subgroup_bytes);
  ~NvmeSwapper();  // waits for in-flight I/O, closes and removes the file
  NvmeSwapper(const NvmeSwapper&) = delete;
  NvmeSwapper& operator=(const NvmeSwapper&) = delete;

  size_t num_subgroups() const { return bytes_.size(); }
  size_t bytes(size_t k) const { return bytes_.at(k); }
  // Bytes a buffer for sub-group k must hold (bytes(k) rounded up to kDirectIoAlignment).
  size_t padded_bytes(size_t k) const { return padded_.at(k); }
  size_t max_padded_bytes() const;
  size_t file_bytes() const { return file_bytes_; }
  const std::string& file_path() const { return file_path_; }
  const SwapperConfig& config() const { return config_; }

  // buf: kDirectIoAlignment-aligned, padded_bytes(k) long, untouched until wait() returns.
  AioHandle write(size_t k, const void* buf);
  AioHandle read(size_t k, void* buf);
  // Rethrows a failed transfer's error (path, offset, errno text).
  void wait(const AioHandle& h) { engine_->wait(h); }

 private:
  SwapperConfig config_;
  std::vector<size_t> bytes_, padded_, offset_;
  size_t file_bytes_ = 0;
  std::string file_path_;
  int fd_ = -1;
  std::unique_ptr<AioEngine> engine_;
};

// Free bytes for an unprivileged writer at `path` (statvfs), or throws naming the path.
size_t free_bytes_at(const std::string& path);

}  // namespace zt::offload
