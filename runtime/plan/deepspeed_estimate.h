// DeepSpeed's documented model-states memory estimators (estimate_zero2_model_states_mem_needs and
// estimate_zero3_model_states_mem_needs), recomputed here so a plan can show them beside ours.
#pragma once

#include <cstdint>

namespace zt {

struct DsEstimate {
  double host_bytes = 0;    // DeepSpeed's "per CPU" column: one node's host RAM
  double device_bytes = 0;  // DeepSpeed's "per GPU" column
};

// ZeRO-2 formula (DeepSpeed uses it for stages 1 and 2). cpu_offload = offload_optimizer on.
DsEstimate ds_estimate_zero2(int64_t total_params, int gpus_per_node, int nodes, bool cpu_offload,
                             double additional_buffer_factor = 1.5);

// ZeRO-3 formula. cpu_offload = offload_optimizer on, cpu_offload_params = offload_param on.
DsEstimate ds_estimate_zero3(int64_t total_params, int64_t largest_layer_params, int gpus_per_node,
                             int nodes, bool cpu_offload, bool cpu_offload_params, bool zero_init,
                             double additional_buffer_factor = 1.5);

}  // namespace zt
