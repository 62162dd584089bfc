// ProcessMemoryReport::sample: /proc/self/status (and the CUDA driver's free memory) on every rank,
// one all-gather of the short records.
#include "runtime/monitor/process_memory_report.h"

#include "collectives/rank_exchange.h"
#include "runtime/plan/gpu_memory.h"
#include "runtime/plan/process_memory.h"

namespace zt {

ProcessMemoryReport::ProcessMemoryReport(Communicator& comm, Backend& backend, uint64_t baseline)
    : comm_(comm), backend_(backend), baseline_(baseline) {}

nlohmann::json ProcessMemoryReport::sample(const MemoryLedger& ledger) {
  const ProcessMemory m = read_process_memory();
  nlohmann::json mine = {{"baseline", baseline_},
                         {"rss", m.rss},
                         {"hwm", m.hwm},
                         {"ledger_peak", ledger.peak_total()},
                         {"ledger_host", ledger.host().total()}};
  if (backend_.name() == "cuda")
    if (const auto g = query_gpu_memory()) mine["device_used"] = g->total_bytes - g->free_bytes;
  // Staged through the backend's memory where the communicator needs that (NCCL).
  RankExchange exchange(comm_, backend_.native_stream() ? &backend_ : nullptr);
  nlohmann::json out = nlohmann::json::object();
  for (const std::string& text : exchange.all_gather(mine.dump())) {
    const nlohmann::json r = nlohmann::json::parse(text);
    for (auto it = r.begin(); it != r.end(); ++it) out[it.key()].push_back(it.value());
  }
  return out;
}

}  // namespace zt
