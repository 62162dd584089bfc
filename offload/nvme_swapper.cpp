// NvmeSwapper: file set-up checks (path, file system, O_DIRECT, fallocate), per-sub-group aligned
// regions of one file that is unlinked as soon as it is open, and the removal of stale files.
#include "offload/nvme_swapper.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace zt::offload {
namespace {

std::string errno_text(int err) { return std::string(std::strerror(err)) + " (errno " + std::to_string(err) + ")"; }

// statfs magic numbers of network file systems (linux/magic.h).
const char* network_fs_name(long type) {
  switch (static_cast<unsigned long>(type)) {
    case 0x6969UL: return "nfs";
    case 0x517BUL: return "smb";
    case 0xFF534D42UL: return "cifs";
    case 0xFE534D42UL: return "smb2";
    case 0x564C: return "ncp";
    case 0x00C36400UL: return "ceph";
    case 0x47504653UL: return "gpfs";
    case 0x0BD00BD0UL: return "lustre";
    default: return nullptr;
  }
}

size_t round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

}  // namespace

size_t free_bytes_at(const std::string& path) {
  struct statvfs s{};
  if (statvfs(path.c_str(), &s) != 0)
    throw std::runtime_error("nvme_path '" + path + "': statvfs failed: " + errno_text(errno));
  return static_cast<size_t>(s.f_bavail) * static_cast<size_t>(s.f_frsize);
}

StaleSwapFiles remove_stale_swap_files(const std::string& dir) {
  StaleSwapFiles r;
  DIR* d = opendir(dir.c_str());
  if (!d) return r;
  while (const dirent* e = readdir(d)) {
    // zt_swap_rank<r>_pid<p>_<n>.bin
    unsigned rank = 0, n = 0;
    long pid = 0;
    int end = 0;
    if (std::sscanf(e->d_name, "zt_swap_rank%u_pid%ld_%u.bin%n", &rank, &pid, &n, &end) != 3 ||
        e->d_name[end] != '\0' || pid <= 0)
      continue;
    if (kill(pid_t(pid), 0) == 0 || errno != ESRCH) continue;  // that process is alive (or not ours to judge)
    const std::string path = dir + (dir.back() == '/' ? "" : "/") + e->d_name;
    struct stat st{};
    const uint64_t bytes = stat(path.c_str(), &st) == 0 ? uint64_t(st.st_blocks) * 512 : 0;
    if (unlink(path.c_str()) == 0) {
      r.removed.push_back(path);
      r.bytes += bytes;
    } else if (errno != ENOENT) {  // another rank on this node may have removed it first
      r.failed.push_back(path + ": " + errno_text(errno));
    }
  }
  closedir(d);
  return r;
}

NvmeSwapper::NvmeSwapper(SwapperConfig config, std::vector<size_t> subgroup_bytes)
    : config_(std::move(config)), bytes_(std::move(subgroup_bytes)), engine_(std::make_unique<AioEngine>(config_.aio)) {
  const std::string& dir = config_.nvme_path;
  struct stat st{};
  if (dir.empty() || stat(dir.c_str(), &st) != 0) {
    const int err = dir.empty() ? ENOENT : errno;
    throw std::runtime_error("nvme_path '" + dir + "' is not usable: " + errno_text(err) +
                             ". Fix: create the directory or point nvme_path at an existing directory on a local NVMe drive");
  }
  if (!S_ISDIR(st.st_mode))
    throw std::runtime_error("nvme_path '" + dir + "' is not a directory. Fix: point nvme_path at a directory");
  struct statfs fs{};
  if (statfs(dir.c_str(), &fs) != 0)
    throw std::runtime_error("nvme_path '" + dir + "': statfs failed: " + errno_text(errno));
  if (const char* net = network_fs_name(fs.f_type))
    throw std::runtime_error("nvme_path '" + dir + "' is on a network file system (" + net +
                             "): swapping optimizer state there is slow and unsafe. Fix: use a local NVMe drive");

  for (size_t b : bytes_) {
    offset_.push_back(file_bytes_);
    padded_.push_back(round_up(b, kDirectIoAlignment));
    file_bytes_ += padded_.back();
  }
  // A unique name per rank and process; O_EXCL so two swappers never share a file.
  const std::string stem = dir + (dir.back() == '/' ? "" : "/") + "zt_swap_rank" + std::to_string(config_.rank) +
                           "_pid" + std::to_string(getpid()) + "_";
  remove_stale_swap_files(dir);
  for (int n = 0; fd_ < 0; ++n) {
    file_path_ = stem + std::to_string(n) + ".bin";
    fd_ = open(file_path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_DIRECT | O_CLOEXEC, 0600);
    // The name goes at once: the open descriptor keeps the blocks, and the kernel frees them when
    // the process ends however it ends (kill -9, abort, a crash), so no file can outlive it.
    if (fd_ >= 0 && unlink(file_path_.c_str()) != 0) {
      const int err = errno;
      close(fd_);
      fd_ = -1;
      throw std::runtime_error("cannot unlink the new swap file '" + file_path_ + "': " + errno_text(err) +
                               ". Fix: give the user write permission on nvme_path");
    }
    if (fd_ >= 0) break;
    const int err = errno;
    if (err == EEXIST && n < 1000) continue;
    if (err == EINVAL)
      throw std::runtime_error("cannot open '" + file_path_ + "' with O_DIRECT: " + errno_text(err) +
                               ": this file system refuses direct I/O (older tmpfs does). Fix: point nvme_path at an "
                               "ext4/xfs directory on a local drive");
    throw std::runtime_error("cannot create swap file '" + file_path_ + "': " + errno_text(err));
  }
  auto fail = [&](const std::string& msg) {
    close(fd_);
    fd_ = -1;
    throw std::runtime_error(msg);
  };
  if (file_bytes_ > 0 && fallocate(fd_, 0, 0, static_cast<off_t>(file_bytes_)) != 0) {
    const int err = errno;
    if (err == EOPNOTSUPP) {  // no reservation possible: size it; a later ENOSPC still stops the run
      if (ftruncate(fd_, static_cast<off_t>(file_bytes_)) != 0)
        fail("cannot size swap file '" + file_path_ + "' to " + std::to_string(file_bytes_) + " bytes: " + errno_text(errno));
    } else {
      size_t avail = 0;
      try {
        avail = free_bytes_at(dir);
      } catch (const std::exception&) {
      }
      fail("cannot reserve " + std::to_string(file_bytes_) + " bytes for swap file '" + file_path_ + "': " +
           errno_text(err) + " (" + std::to_string(avail) + " bytes free at " + dir +
           "). Fix: free space there, point nvme_path at a larger drive, or offload less");
    }
  }
  // O_DIRECT may be accepted by open() yet refused on the first transfer: probe one block now.
  void* probe = nullptr;
  if (file_bytes_ > 0 && posix_memalign(&probe, kDirectIoAlignment, kDirectIoAlignment) == 0) {
    const ssize_t r = pread(fd_, probe, kDirectIoAlignment, 0);
    const int err = errno;
    free(probe);
    if (r < 0)
      fail("direct read from '" + file_path_ + "' failed: " + errno_text(err) +
           (err == EINVAL ? ": this file system refuses direct I/O. Fix: point nvme_path at an ext4/xfs directory" : ""));
  }
}

NvmeSwapper::~NvmeSwapper() {
  engine_.reset();  // finishes in-flight pieces before the descriptor goes away
  if (fd_ >= 0) close(fd_);  // the file was unlinked when opened: closing frees its blocks
}

size_t NvmeSwapper::max_padded_bytes() const {
  size_t m = 0;
  for (size_t b : padded_) m = std::max(m, b);
  return m;
}

AioHandle NvmeSwapper::write(size_t k, const void* buf) {
  return engine_->submit(IoOp::Write, fd_, file_path_, const_cast<void*>(buf), padded_.at(k),
                        static_cast<off_t>(offset_.at(k)));
}

AioHandle NvmeSwapper::read(size_t k, void* buf) {
  return engine_->submit(IoOp::Read, fd_, file_path_, buf, padded_.at(k), static_cast<off_t>(offset_.at(k)));
}

}  // namespace zt::offload
