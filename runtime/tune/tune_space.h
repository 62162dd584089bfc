// The tuner's search space: a cell is a (ZeRO stage, optimizer offload) pair; a trial is a cell, a
// micro batch, its accumulation and, outside fast mode, the stage's knobs. The batch policy says
// which micro batches a cell may try and with what accumulation; the knob space is DeepSpeed's per
// stage (autotuning/constants.py DEFAULT_TUNING_SPACE_ZERO_{1,2,3}) less the knobs zerotrain does not
// act on; trial_config writes a trial's ds_config from the user's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/offload.h"

namespace zt {

struct TuneCell {
  int stage = 0;
  OffloadDevice offload = OffloadDevice::None;
  std::string name() const;  // "z2", "z2_cpu"
};

// The knobs a non-fast trial sets (unset: the user's config decides).
struct TuneKnobs {
  std::optional<bool> overlap_comm;
  std::optional<int64_t> reduce_bucket_size, allgather_bucket_size;
  bool any() const { return overlap_comm || reduce_bucket_size || allgather_bucket_size; }
  std::string text() const;  // "overlap_comm=true reduce_bucket_size=5e+08", or "-"
};

struct TrialSpec {
  TuneCell cell;
  int64_t micro_batch = 1, gas = 1;
  TuneKnobs knobs;
  std::string name() const;  // DeepSpeed's style: z2_cpu_gas1_tmbspg8[_oc1_rbs5e8_abs5e8]
};

// Which micro batches a cell tries and the accumulation each gets.
struct BatchPolicy {
  enum class Mode {
    FixedGas,      // the user's gradient_accumulation_steps; the global batch follows the micro batch
    KeepGlobal,    // train_batch_size fixed: micro batches dividing it per rank, gas = B / (W·mbs)
    MaxGlobal,     // DeepSpeed's max_train_batch_size: gas = (B / W) / mbs (at least 1)
  };
  Mode mode = Mode::FixedGas;
  int world_size = 1;
  int64_t gas = 1;             // FixedGas
  int64_t global_batch = 0;    // KeepGlobal, MaxGlobal
  int64_t min_micro = 1, max_micro = 1024;
  int64_t min_global = 1;
  // The accumulation for `micro`, or none when the policy does not allow it.
  std::optional<int64_t> gas_for(int64_t micro) const;
  // The largest micro batch the policy allows (before memory).
  int64_t largest_micro() const;
  // At most `n + 1` micro batches up to max_fit: the smallest allowed, then the n largest of the
  // powers of two and max_fit (DeepSpeed's minimum plus num_tuning_micro_batch_sizes near the maximum).
  std::vector<int64_t> candidates(int64_t max_fit, int n) const;
};

// DeepSpeed's knob space for a stage, less what zerotrain does not act on (ignored_knobs()), with
// bucket sizes at or above the model's parameter count collapsed into one (they cut the same buckets).
std::vector<TuneKnobs> knob_space(int stage, int64_t params);
// DeepSpeed's tuned keys that zerotrain parses but does not act on, each with why.
const std::vector<std::pair<std::string, std::string>>& ignored_knobs();

// The trial's ds_config: the user's, without its autotuning block, with the stage, the optimizer
// offload, the batch keys (train_batch_size = mbs·gas·W) and the knobs set.
nlohmann::json trial_config(const nlohmann::json& base, const TrialSpec& t, int world_size);

}  // namespace zt
