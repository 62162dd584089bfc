// Machine facts for pre-flight: host RAM available, GPU memory, and what a path's file system is
// (exists, directory, writable, type, network or not, free bytes) — read from /proc and statfs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/common/diagnostics.h"
#include "runtime/plan/memory_plan.h"

namespace zt {

struct PathInfo {
  bool exists = false, is_dir = false, writable = false;
  std::string fs_type;  // "ext4", "tmpfs", "nfs", ... ("unknown" for unrecognised magic)
  bool is_network = false;  // NFS, CIFS/SMB, 9p, FUSE, ...
  uint64_t free_bytes = 0;
  uint64_t total_bytes = 0;   // f_blocks·f_frsize
  std::string error;          // why stat/statfs failed ("" when it did not), e.g. "No such file or directory"
};
PathInfo probe_path(const std::string& path);

struct MachineFacts {
  uint64_t host_mem_available = 0;  // /proc/meminfo MemAvailable, bytes
  uint64_t host_mem_total = 0;
  std::optional<uint64_t> gpu_free, gpu_total;  // only where a GPU is present
};
MachineFacts probe_machine();
// Parses /proc/meminfo-format text (values in kB) into host_mem_available / host_mem_total.
void parse_meminfo(const std::string& text, MachineFacts& facts);

// Compares the plan with the machine; each shortfall is an error with the numbers, e.g.
// "offload_optimizer=cpu needs 84.1 GiB of host RAM for 7.0B params at world size 8; this host has
// 31.2 GiB available". nvme_path may be empty when nothing goes to NVMe; nvme_here false skips the
// NVMe space check (the target is another machine, whose drives cannot be probed from here).
Diagnostics preflight(const MemoryPlan& plan, const MachineFacts& facts, const std::string& nvme_path,
                      bool nvme_here = true);

}  // namespace zt
