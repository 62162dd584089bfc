// ProcessTrialRunner: a trial as a real job. It writes the trial's ds_config into its experiment
// folder (exps_dir/<trial name>/), launches `LAUNCHER -np W zerotrain --config ... --steps S
// --metrics ...` in its own process group with the output in run_<k>.log, kills the group at the
// timeout, and reads the metrics file: tokens/s over the steps from start_profile_step on, the
// ledger's peak. The status comes from the exit code alone (never from the log's text): 0 ok,
// 4 (kOutOfMemoryExit: an allocation failed) or 128 + SIGKILL (the kernel's OOM killer) oom, our
// timeout timeout, anything else error (2, the job refused its input, and 127, the launcher could
// not run, stop the search: every later trial would fail the same way). Each run's outcome is kept
// as result_<k>.json with a fingerprint of the job (its ds_config, command line, steps, profile step
// and zerotrain's version); with overwrite false a later tune reads an ok or oom result whose
// fingerprint matches instead of running the trial again. A stop request (the tune command's
// SIGINT/SIGTERM flag) ends the running trial's process group and throws TuneInterrupted.
#pragma once

#include <csignal>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/tune/tuner.h"

namespace zt {

struct TrialLaunch {
  // The launcher's words: "{np}" is replaced by the world size; without it mpirun/mpiexec get
  // "-np W" appended and any other launcher (scripts/cluster.sh run -n 2 --) decides the ranks itself.
  std::vector<std::string> launcher = {"mpirun"};
  std::string zerotrain;                 // the binary each trial runs
  std::vector<std::string> train_flags;  // the model and any extra flags, after the config
  int world_size = 1;
  int steps = 12;
  int start_profile_step = 3;
  double timeout_s = 300;
  std::string exps_dir;
  bool overwrite = true;
  nlohmann::json base_config;
  std::string version;                   // zerotrain's version and commit, part of the fingerprint
  // Set (to the signal number) by the command's SIGINT/SIGTERM handler: the trial is stopped.
  const volatile std::sig_atomic_t* stop = nullptr;
};

// A stop request arrived during a trial: its processes were ended; the tune stops.
struct TuneInterrupted : std::runtime_error {
  int signal;
  explicit TuneInterrupted(int s) : std::runtime_error("interrupted"), signal(s) {}
};

// The job's command line for a config file (no --steps/--metrics): cmd_optimal.txt and each trial's.
std::vector<std::string> trial_command(const TrialLaunch& l, const std::string& config_path);
std::string shell_join(const std::vector<std::string>& words);
// Creates the folder and its parents; true when it is a folder this process can write into.
bool make_dirs(const std::string& path);

// What a finished run's metrics say, over the steps from start_profile_step on (the last step when
// the run is shorter); false when the file has no step record.
bool read_trial_metrics(const std::string& path, int start_profile_step, TrialOutcome& out);

class ProcessTrialRunner : public TrialRunner {
 public:
  explicit ProcessTrialRunner(TrialLaunch launch) : l_(std::move(launch)) {}
  TrialOutcome run(const TrialSpec& t, int repeat) override;

 private:
  TrialLaunch l_;
};

}  // namespace zt
