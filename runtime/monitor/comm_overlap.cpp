// CommOverlap: the Wait spans of a trace range against the communicator's busy time.
#include "runtime/monitor/comm_overlap.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace zt {

double OverlapShare::hidden() const {
  if (comm_s <= 0) return 0;
  return std::clamp(1.0 - exposed_s / comm_s, 0.0, 1.0);
}

OverlapShare overlap_share(const Trace& trace, const std::vector<std::pair<size_t, size_t>>& steps, double comm_busy_s) {
  OverlapShare o;
  o.comm_s = comm_busy_s;
  const nlohmann::json j = trace.to_json(0);
  size_t index = 0;  // among the recorded spans ("X" events), in recording order
  size_t r = 0;      // the first step range that does not end before `index` (ranges are ascending)
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    while (r < steps.size() && steps[r].second <= index) ++r;
    const bool in_step = r < steps.size() && index >= steps[r].first;
    if (in_step && e.at("tid") == int(TraceTrack::Wait)) o.exposed_s += e.at("dur").get<double>() * 1e-6;
    ++index;
  }
  return o;
}

}  // namespace zt
