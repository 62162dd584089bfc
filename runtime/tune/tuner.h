// Tuner: zerotrain's autotuner. It asks a planner, before anything runs, which micro batches each
// (stage, offload) cell fits in the usable memory, drops the cells that cannot fit a micro batch of
// one (with the plan's reason), then runs trials through a runner in the order of a plan score
// calibrated by the trials already measured, stops early or at the cap as DeepSpeed's tuner does,
// re-runs the best three and picks by median (latency minimised; within 5% the lower stage, the
// smaller offload and the smaller planned peak win; names break ties, so the pick is deterministic).
//
// The plan score of a trial, tokens per step over a predicted step time:
//   step = c · tokens + (wire bytes + offload bytes) / bw
// with c (compute seconds per token) the median over measured trials of (step − communication
// busy time) / tokens, and bw the measured bytes over the measured communication time; before any
// trial c = 1 µs and bw = 1 GB/s. Only the order depends on it: every pick is measured.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/tune/autotuning_options.h"
#include "runtime/tune/tune_space.h"

namespace zt {

// The memory plan's answer for one trial.
struct PlanVerdict {
  bool fits = false;
  std::string reason;              // why not (check's first error), when it does not fit
  double peak_bytes = 0;           // planned peak per rank on the training device
  double wire_bytes_per_step = 0;  // what one rank sends per step (all micro-steps)
  double offload_bytes_per_step = 0;  // what crosses between the device and the host per step
  double tokens_per_step = 0;      // per rank
  double flops_per_token = 0;      // the model's training FLOPs per token (metric flops)
};

class TunePlanner {
 public:
  virtual ~TunePlanner() = default;
  virtual PlanVerdict assess(const TrialSpec& t) = 0;
};

enum class TrialStatus { Ok, Oom, Error, Timeout, Skipped };
const char* trial_status_name(TrialStatus s);

// One run of a trial.
struct TrialOutcome {
  TrialStatus status = TrialStatus::Error;
  int exit_code = 0;                 // the launcher's (128 + signal when killed)
  double tokens_per_s = 0;           // the job's, over the profile window
  double step_ms = 0;                // mean over the profile window
  double measured_peak_bytes = 0;    // the ledger's peak on rank 0
  double comm_bytes_per_step = 0, comm_busy_s_per_step = 0;  // rank 0's, for the score
  double wall_s = 0;
  bool reused = false;               // read from an earlier tune's experiment folder
  std::string detail;                // what went wrong, for the table
  bool stops_search = false;         // a failure every later trial would repeat (bad input, no launcher)
};

class TrialRunner {
 public:
  virtual ~TrialRunner() = default;
  // `repeat` 0 is the first run; later ones are the re-runs of the best.
  virtual TrialOutcome run(const TrialSpec& t, int repeat) = 0;
};

struct TrialRow {
  TrialSpec spec;
  PlanVerdict plan;
  std::vector<TrialOutcome> runs;
  bool ok() const;                   // every run ok
  double median_tokens_per_s() const;
  double median_step_ms() const;
  double metric(TuneMetric m) const;  // larger is better (latency negated)
};

struct DroppedCell {
  TuneCell cell;
  std::string reason;
};

struct TuneResult {
  std::vector<TrialRow> rows;        // in the order they ran
  std::vector<DroppedCell> dropped;
  std::vector<std::pair<TuneCell, int64_t>> max_micro;  // each kept cell's largest micro batch that fits
  std::optional<size_t> best;        // index into rows
  int trials = 0;                    // runs, repeats included
  std::string stopped_because;       // "search space exhausted", "early stopping after ...", "tuner_num_trials ..."
  bool aborted = false;              // a trial failed in a way every trial would: no pick is made
};

struct TuneSetup {
  AutotuningOptions options;
  std::vector<TuneCell> cells;
  BatchPolicy batch;
  int64_t params = 0;                // for the knob space
  int repeats = 2;                   // runs of each of the best three
  uint64_t seed = 0;                 // tuner_type random
};

// A progress line for each finished run: "trial k of n ...".
using TuneProgress = std::function<void(const std::string&)>;

class Tuner {
 public:
  Tuner(TuneSetup setup, TunePlanner& planner, TrialRunner& runner, TuneProgress progress = {});
  TuneResult run();

  struct Candidate {
    TrialSpec spec;
    PlanVerdict plan;
  };
  // The plan alone (no trial runs): each cell's largest micro batch or why it was dropped (in r),
  // and the fast-mode candidates.
  std::vector<Candidate> plan_cells(TuneResult& r);

 private:
  int64_t largest_fit(const TuneCell& cell);
  double predicted_metric(const Candidate& c, const TuneResult& r) const;
  // Runs candidates in score order until exhausted, early-stopped or capped; returns false at the cap.
  bool search(std::vector<Candidate> pending, TuneResult& r, const std::string& phase);
  void run_one(const Candidate& c, TuneResult& r);
  void repeat_best(TuneResult& r);
  void pick(TuneResult& r) const;

  TuneSetup s_;
  TunePlanner& planner_;
  TrialRunner& runner_;
  TuneProgress progress_;
  int planned_runs_ = 0;  // for the progress line's "of n"
};

}  // namespace zt
