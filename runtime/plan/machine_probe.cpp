// probe_path (stat, statfs, access) and probe_machine (/proc/meminfo, CUDA device memory).
#include "runtime/plan/machine_probe.h"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "runtime/plan/fs_types.h"
#include "runtime/plan/gpu_memory.h"

namespace zt {

PathInfo probe_path(const std::string& path) {
  PathInfo info;
  struct stat st {};
  if (path.empty()) {
    info.error = "empty path";
    return info;
  }
  if (::stat(path.c_str(), &st) != 0) {
    info.error = std::strerror(errno);  // ENOENT, ENOTDIR, EACCES, ELOOP: the path is unusable
    return info;
  }
  info.exists = true;
  info.is_dir = S_ISDIR(st.st_mode);
  info.writable = ::access(path.c_str(), W_OK) == 0;
  struct statfs fs {};
  if (::statfs(path.c_str(), &fs) != 0) {
    info.error = std::string("statfs: ") + std::strerror(errno);
    info.fs_type = "unknown";
    return info;
  }
  const FsType t = fs_type_from_magic(static_cast<uint64_t>(fs.f_type));
  info.fs_type = t.name;
  info.is_network = t.is_network;
  info.free_bytes = uint64_t(fs.f_bavail) * uint64_t(fs.f_bsize);
  const uint64_t frsize = fs.f_frsize ? uint64_t(fs.f_frsize) : uint64_t(fs.f_bsize);
  info.total_bytes = uint64_t(fs.f_blocks) * frsize;
  // A read-only mount refuses writes even to root, whose access(W_OK) otherwise says yes.
  if (fs.f_flags & ST_RDONLY) info.writable = false;
  return info;
}

void parse_meminfo(const std::string& text, MachineFacts& facts) {
  std::istringstream in(text);
  std::string key;
  uint64_t value = 0;
  std::string unit;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    if (!(ls >> key >> value)) continue;
    ls >> unit;
    const uint64_t scale = unit == "kB" ? 1024 : 1;
    if (key == "MemAvailable:") facts.host_mem_available = value * scale;
    else if (key == "MemTotal:") facts.host_mem_total = value * scale;
  }
}

MachineFacts probe_machine() {
  MachineFacts facts;
  std::ifstream f("/proc/meminfo");
  if (f) {
    std::stringstream ss;
    ss << f.rdbuf();
    parse_meminfo(ss.str(), facts);
  }
  if (auto gpu = query_gpu_memory()) {
    facts.gpu_free = gpu->free_bytes;
    facts.gpu_total = gpu->total_bytes;
  }
  return facts;
}

}  // namespace zt
