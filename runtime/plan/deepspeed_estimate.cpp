// DeepSpeed's estimator formulas, written from their documented definitions (see memory_plan.h for
// the formulas in one place). DeepSpeed truncates the per-GPU partition term and the results to int.
#include "runtime/plan/deepspeed_estimate.h"

#include <algorithm>
#include <cmath>

namespace zt {

namespace {
double trunc_bytes(double v) { return std::trunc(v); }
}  // namespace

DsEstimate ds_estimate_zero2(int64_t total_params, int gpus_per_node, int nodes, bool cpu_offload,
                             double factor) {
  const double psi = double(total_params);
  const double g = std::max(1, gpus_per_node);
  const double total_gpus = g * std::max(1, nodes);
  DsEstimate e;
  if (cpu_offload) {
    e.device_bytes = 2 * psi;
    e.host_bytes = psi * std::max(4 * g, 16.0) * factor;
  } else {
    e.device_bytes = 4 * psi + trunc_bytes(16 * psi / total_gpus);
    e.host_bytes = psi * 4 * g * factor;
  }
  e.device_bytes = trunc_bytes(e.device_bytes);
  e.host_bytes = trunc_bytes(e.host_bytes);
  return e;
}

DsEstimate ds_estimate_zero3(int64_t total_params, int64_t largest_layer_params, int gpus_per_node,
                             int nodes, bool cpu_offload, bool cpu_offload_params, bool zero_init,
                             double factor) {
  const double psi = double(total_params);
  const double g = std::max(1, gpus_per_node);
  const double m = std::max(1, nodes);
  const double total_gpus = g * m;
  const double per_node = 1.0 / m;  // DeepSpeed's gpus_factor
  const double largest_layer_memory = 4.0 * double(largest_layer_params);
  DsEstimate e;
  if (cpu_offload && cpu_offload_params) {
    e.device_bytes = largest_layer_memory;
    e.host_bytes = zero_init ? psi * 18 * per_node * factor : psi * std::max(4 * g, 18 * per_node) * factor;
  } else if (cpu_offload) {
    e.device_bytes = largest_layer_memory + trunc_bytes(2 * psi / total_gpus);
    e.host_bytes = zero_init ? psi * 16 * per_node * factor : psi * std::max(4 * g, 16 * per_node) * factor;
  } else {
    e.device_bytes = largest_layer_memory + trunc_bytes(18 * psi / total_gpus);
    e.host_bytes = zero_init ? double(largest_layer_params) * 4 * g * factor : psi * 4 * g * factor;
  }
  e.device_bytes = trunc_bytes(e.device_bytes);
  e.host_bytes = trunc_bytes(e.host_bytes);
  return e;
}

}  // namespace zt
