// StepBoundary: at the end of every step the ranks decide together whether to go on. A stop signal
// that reached any rank, or an output that failed on any rank, stops all of them at that boundary;
// save_before_stop is where the run will write its checkpoint before it stops.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/engine/engine.h"
#include "runtime/train/training_run.h"
#include "runtime/train/word_exchange.h"

namespace zt {

struct StopDecision {
  int signal = 0;                   // the lowest-numbered rank's stop signal, 0 when none
  std::vector<int> signalled;       // ranks that received a stop signal
  std::vector<int> output_failed;   // ranks whose --metrics/--trace write failed
  bool stop() const { return signal != 0 || !output_failed.empty(); }
};

class StepBoundary {
 public:
  StepBoundary(Communicator& comm, Backend& backend) : x_(comm, backend) {}
  // Collective: one int64 word per rank (at world size 1, no communication).
  StopDecision agree(int local_signal, bool local_output_failed);

 private:
  WordExchange x_;
};

// Called on every rank at the step boundary where a stop signal ends the run, after `step` steps,
// before the run returns. The checkpoint code saves here when --save is given (collective, like the
// save). Checkpoints are not built yet: it writes nothing and returns false, and the run says so.
bool save_before_stop(Engine& engine, const RunOptions& o, int64_t step);

}  // namespace zt
