// The tuner's outputs in results_dir: tune.csv and tune.md (one row per trial: cell, micro batch,
// accumulation, knobs, planned and measured peak, the plan's error, tokens/s, step, status, exit
// code, wall time), summary.txt (DeepSpeed's per-space table, the dropped cells with the plan's
// reason, the knobs not acted on, why the search stopped), ds_config_optimal.json and
// cmd_optimal.txt (the pick, runnable as it is by zerotrain and DeepSpeed alike), and the two plots
// (tune_plots.h: tokens_per_s.svg, plan_vs_measured.svg).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/tune/tuner.h"

namespace zt {

struct TuneReportInput {
  const TuneResult& result;
  TuneMetric metric = TuneMetric::Throughput;
  int world_size = 1;
  nlohmann::json base_config;
  std::string optimal_command;  // the job's command line for ds_config_optimal.json
};

// A planned peak more than this share away from the measured one is flagged in the tables.
inline constexpr double kPlanErrorFlag = 0.10;

// Writes the files; returns the paths written, or throws UserError naming a file it could not write.
std::vector<std::string> write_tune_report(const std::string& results_dir, const TuneReportInput& in);
// The table the command prints at the end (tune.md's rows, without the Markdown title).
std::string tune_table(const TuneReportInput& in);

}  // namespace zt
