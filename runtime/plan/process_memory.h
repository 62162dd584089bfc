// ProcessMemory: what the operating system says this process holds in RAM (/proc/self/status:
// VmRSS now, VmHWM its peak, and the shared-memory part of the resident set), and the one way to
// start the peak afresh (writing 5 to /proc/self/clear_refs), so that a run can compare its own
// ledger with the kernel's numbers.
#pragma once

#include <cstdint>
#include <string>

namespace zt {

struct ProcessMemory {
  uint64_t rss = 0;        // VmRSS, bytes
  uint64_t hwm = 0;        // VmHWM: the peak resident set since start (or the last reset_peak)
  uint64_t rss_shmem = 0;  // RssShmem: resident shared memory (MPI's shared-memory transport)
  bool known = false;      // false where /proc/self/status cannot be read (not Linux)
};

// Reads /proc/self/status.
ProcessMemory read_process_memory();
// Parses /proc/self/status-format text (values in kB).
ProcessMemory parse_process_status(const std::string& text);
// Sets VmHWM to the current VmRSS (Linux ≥ 4.0). False where the kernel refuses it; the peak then
// still counts from the process's start.
bool reset_process_peak();

}  // namespace zt
