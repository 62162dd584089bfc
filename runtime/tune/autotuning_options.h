// AutotuningOptions: DeepSpeed's `autotuning` block (its keys and its code's defaults, which differ
// from its docs in two places: tuner_type "gridsearch", overwrite true), read from a ds_config for
// `zerotrain tune` with every problem collected: mp_size other than 1 refused (no tensor
// parallelism here), arg_mappings ignored with a note (trials are zerotrain runs, not a script's
// flags), model_based falling back to the plan's order with a warning (no cost model is trained),
// unknown keys warned about (DeepSpeed ignores them silently).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "runtime/common/diagnostics.h"

namespace zt {

// The largest micro batch per rank the tuner will search (a larger bound is refused).
inline constexpr int64_t kMaxTunedMicroBatch = int64_t(1) << 20;

enum class TuneMetric { Throughput, Latency, Flops };
const char* tune_metric_name(TuneMetric m);

// The order trials are tried in: gridsearch and model_based follow the plan's score; random is a
// fixed shuffle of it (seeded, so a rerun repeats it).
enum class TunerType { GridSearch, Random, ModelBased };
const char* tuner_type_name(TunerType t);

struct AutotuningOptions {
  bool enabled = false;
  bool fast = true;  // true: stage, offload and micro batch only; false: also the stage's knobs
  TuneMetric metric = TuneMetric::Throughput;
  int start_profile_step = 3, end_profile_step = 5;
  TunerType tuner_type = TunerType::GridSearch;
  int tuner_early_stopping = 5, tuner_num_trials = 50;
  std::optional<int64_t> max_train_batch_size;
  int64_t min_train_batch_size = 1;
  int64_t min_train_micro_batch_size_per_gpu = 1, max_train_micro_batch_size_per_gpu = 1024;
  int num_tuning_micro_batch_sizes = 3;
  std::string results_dir = "autotuning_results", exps_dir = "autotuning_exps";
  bool overwrite = true;
};

// `block` is the config's "autotuning" value (null when absent: the defaults); `file` names the
// config in messages.
AutotuningOptions read_autotuning_options(const nlohmann::json& block, const std::string& file, Diagnostics& d);

}  // namespace zt
