// NvmeSwapper: pages sub-groups of optimizer state (or params) to one direct-I/O file per rank
// under nvme_path, unlinked as soon as it is open so it never outlives the process; async I/O.
#pragma once

#include <cstddef>
#include <cstdint>
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
  // Checks the path (exists, is a directory, not a network file system), removes stale swap files
  // of exited processes, creates zt_swap_rank<r>_pid<p>_<n>.bin with O_DIRECT, unlinks it at once
  // (the descriptor keeps it: nothing is left behind on any exit) and reserves its size with fallocate.
  // Throws std::runtime_error naming the path, the errno text and the fix when any step fails
  // (missing path, O_DIRECT refused with EINVAL, ENOSPC, ...).
  NvmeSwapper(SwapperConfig config, std::vector<size_t> subgroup_bytes);
  ~NvmeSwapper();  // waits for in-flight I/O and closes the (already nameless) file
  NvmeSwapper(const NvmeSwapper&) = delete;
  NvmeSwapper& operator=(const NvmeSwapper&) = delete;

  size_t num_subgroups() const { return bytes_.size(); }
  size_t bytes(size_t k) const { return bytes_.at(k); }
  // Bytes a buffer for sub-group k must hold (bytes(k) rounded up to kDirectIoAlignment).
  size_t padded_bytes(size_t k) const { return padded_.at(k); }
  size_t max_padded_bytes() const;
  size_t file_bytes() const { return file_bytes_; }
  const std::string& file_path() const { return file_path_; }  // the name it had, for messages
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

// Swap files left by processes that no longer exist (the PID in the name names no live process):
// files of older builds, or of a process killed between open and unlink. Removed; never touches
// a live process's file.
struct StaleSwapFiles {
  std::vector<std::string> removed;  // paths
  uint64_t bytes = 0;                // disk space they held
  std::vector<std::string> failed;   // "path: reason" of those that could not be removed
};
StaleSwapFiles remove_stale_swap_files(const std::string& dir);

// Free bytes for an unprivileged writer at `path` (statvfs), or throws naming the path.
size_t free_bytes_at(const std::string& path);

}  // namespace zt::offload
