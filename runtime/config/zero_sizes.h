// The ZeRO sizes a run uses: DeepSpeed's bucket and sub-group sizes, with its zeros turned into the
// sizes that mean the same thing here (shared by the engine options and the memory plan).
#pragma once

#include <cstdint>

#include "runtime/config/config.h"
#include "runtime/model/model_config.h"

namespace zt {

// DeepSpeed 0.19.5 accepts 0 for these sizes, with this meaning, and zerotrain runs it so:
//   reduce_bucket_size 0: every gradient tensor is reduced on its own (no fusion)
//       -> buckets of the model's largest tensor;
//   allgather_bucket_size 0: unused by DeepSpeed's stage 1-2 gather (one all_gather_into_tensor per
//       partition whatever the size) -> the whole model, one bucket: a single all-gather per step;
//   sub_group_size 0: every parameter tensor is its own optimizer sub-group
//       -> the largest tensor's per-rank share.
// Without a model (options built by hand in tests) a zero becomes 1 element.
struct ZeroSizes {
  int64_t reduce_bucket = 0, allgather_bucket = 0, sub_group = 0;
};
ZeroSizes zero_sizes(const ZeroConfig& z, int64_t world_size, const ModelConfig* model);

// The element count of the model's largest single tensor (wte, wpe, the MLP matrices, the LM head).
int64_t largest_tensor_numel(const ModelConfig& m);

}  // namespace zt
