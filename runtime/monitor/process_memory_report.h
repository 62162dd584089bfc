// ProcessMemoryReport: every rank's memory as the operating system counts it — the resident set now
// (VmRSS), its peak (VmHWM), the baseline measured at start-up and, on a GPU, the device memory the
// driver reports in use — gathered to every rank as one JSON object of per-rank arrays (bytes): the
// metrics file's "process" field, beside the ledger's own numbers.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "collectives/communicator.h"
#include "kernels/backend.h"
#include "runtime/zero/memory_ledger.h"

namespace zt {

class ProcessMemoryReport {
 public:
  // `baseline`: this rank's resident bytes before the run allocated anything (0: not measured).
  ProcessMemoryReport(Communicator& comm, Backend& backend, uint64_t baseline);
  // Collective: every rank reads its numbers now and all get
  // {"baseline": [...], "rss": [...], "hwm": [...], "ledger_peak": [...], "ledger_host": [...]} (and
  // "device_used" on a GPU), in rank order: the ledger's peak and host bytes beside the kernel's.
  nlohmann::json sample(const MemoryLedger& ledger);

 private:
  Communicator& comm_;
  Backend& backend_;
  uint64_t baseline_;
};

}  // namespace zt
