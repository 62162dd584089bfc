// From a resolved Config (plus model size) to the memory plan's input: stage, precision,
// optimizer, offload targets, buckets and activation shapes.
#pragma once

#include <cstdint>

#include "runtime/config/config.h"
#include "runtime/model/model_config.h"
#include "runtime/plan/memory_plan.h"

namespace zt {

// `model` may be null (only a parameter count is known: no activation estimate).
PlanInput plan_input(const Config& c, int64_t params, const ModelConfig* model, int ranks_per_node);

// The directory the plan's NVMe bytes go to: offload_optimizer's nvme_path when the optimizer is on
// NVMe, else offload_param's when the parameters are ("" when neither is, or the path is unset).
std::string plan_nvme_path(const Config& c);

// "7e9", "7B", "1.5B", "124M", "350k", "1000" -> parameter count; false when not understood.
bool parse_param_count(const std::string& text, int64_t& out);

}  // namespace zt
