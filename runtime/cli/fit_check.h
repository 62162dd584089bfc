// check_fit: whether a valid config's memory plan fits this machine or a described target, shared by
// `zerotrain check` (its "fits" section) and `zerotrain tune` (which cells and micro batches may
// run). Also the size and backend arguments both commands take.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/common/diagnostics.h"
#include "runtime/config/config.h"
#include "runtime/config/config_load.h"
#include "runtime/model/model_config.h"
#include "runtime/plan/memory_plan.h"

namespace zt {

struct FitTarget {
  int world_size = 1;
  int ranks_per_node = 0;            // 0: min(world size, 8)
  std::string gpu_memory, host_ram;  // the target machine ("" = this machine)
  std::string save_dir;              // the run will save checkpoints: plan its snapshot
  double usable_share = 1.0;         // the share of the memory the plan may use (tune: 0.9)
};

struct FitReport {
  bool assessed = false;
  std::string target;  // "this machine" or the flags
  Diagnostics diagnostics;
  nlohmann::json memory = nullptr;
  std::string plan_text;
  std::optional<MemoryPlan> plan;
  // With a model: the bytes one rank sends per step (the partition's volumes, the reductions and
  // gathers repeated per micro-step where the stage repeats them) and what crosses between device
  // and host per step under optimizer offload (gradients out, parameters back).
  double wire_bytes_per_step = 0, offload_bytes_per_step = 0;
};

// The memory plan of `c` against the target; problems go to the report's diagnostics, bad flags to d.
FitReport check_fit(const FitTarget& t, const Config& c, int64_t params, const ModelConfig* model, ComputeBackend backend,
                    Diagnostics& d);

// --model NAME or --params N, as check and tune take them: the preset and its parameter count, or
// the count alone (no model); a bad value is an error in d naming the flag.
struct ModelSize {
  std::optional<ModelConfig> model;
  int64_t params = 0;
};
ModelSize model_size_of(const std::string& model, const std::string& params, Diagnostics& d);

// "80GB", "80GiB", "24G", "512M", "1.5T", "1073741824" -> bytes (K/M/G/T are powers of 1024).
bool parse_bytes(const std::string& text, uint64_t& out);
// --backend auto|cpu|cuda as check and tune plan for it; `why` says how auto chose.
ComputeBackend backend_of(const std::string& asked, std::string& why);

}  // namespace zt
