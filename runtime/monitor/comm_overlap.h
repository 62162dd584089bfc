// CommOverlap: the share of communication hidden behind compute — 1 − exposed / busy, where exposed
// is the time the trace shows the compute thread waiting for collectives and busy the time the
// communicator spent on them (its own accounting), over a set of steps.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "runtime/zero/trace.h"

namespace zt {

struct OverlapShare {
  double comm_s = 0;     // the communicator's busy seconds in the steps
  double exposed_s = 0;  // the trace's waits in the same steps
  double hidden() const;  // 1 − exposed / comm, clamped to [0, 1]; 0 when nothing was communicated
};

// Sums the Wait spans among the trace events of the given ranges [first, last) (indices in
// recording order, as Trace::size() counts them: one range per step) and pairs them with the
// communicator's busy seconds in those steps.
OverlapShare overlap_share(const Trace& trace, const std::vector<std::pair<size_t, size_t>>& steps, double comm_busy_s);

}  // namespace zt
