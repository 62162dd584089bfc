// StepBoundary: at the end of every step the ranks decide together whether to go on. A stop signal
// that reached any rank, or an output that failed on any rank, stops all of them at that boundary;
// save_before_stop writes the run's checkpoint there (with --save) before it stops.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <cstdio>

#include "runtime/checkpoint/checkpoint_manager.h"
#include "collectives/rank_exchange.h"

namespace zt {

struct StopDecision {
  int signal = 0;                   // the lowest-numbered rank's stop signal, 0 when none
  std::vector<int> signalled;       // ranks that received a stop signal
  std::vector<int> output_failed;   // ranks whose --metrics/--trace write failed
  bool stop() const { return signal != 0 || !output_failed.empty(); }
};

class StepBoundary {
 public:
  StepBoundary(Communicator& comm, Backend& backend) : x_(comm, &backend) {}
  // Collective: one int64 word per rank (at world size 1, no communication).
  StopDecision agree(int local_signal, bool local_output_failed);

 private:
  RankExchange x_;
};

// Called on every rank at the step boundary where a stop signal ends the run, after `step` steps,
// before the run returns. With --save (a manager that saves) the checkpoint of `step` is written and
// waited for (collective, as every save); true when it was saved. A save that fails is reported on
// `say` (rank 0) and gives false: the run then exits as a stopped run without a checkpoint.
bool save_before_stop(ckpt::CheckpointManager& ckpt, int64_t step, std::FILE* say);

}  // namespace zt
