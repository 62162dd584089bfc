// StopSignals: SIGTERM and SIGINT (what Slurm, Kubernetes and Ctrl-C send before a job is killed)
// become a request to stop at the next step boundary; a second signal ends the process at once.
#pragma once

namespace zt {

// Process-wide: one instance at a time, for the length of a run.
class StopSignals {
 public:
  // Installs the handlers and clears any earlier request. `announce`: this process says that it will
  // stop (a launcher signals every rank at once, so one rank, rank 0, speaks for the job).
  explicit StopSignals(bool announce = true);
  ~StopSignals();  // restores the handlers that were there before
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The first stop signal received since construction (SIGTERM, SIGINT), 0 when none.
  int pending() const;
};

// "SIGTERM", "SIGINT", or "signal N".
const char* stop_signal_name(int sig);

}  // namespace zt
