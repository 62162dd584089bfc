// DeepSpeed's zero bucket and sub-group sizes mapped to the sizes with the same meaning here.
#include "runtime/config/zero_sizes.h"

#include <algorithm>

namespace zt {

int64_t largest_tensor_numel(const ModelConfig& m) {
  const int64_t C = m.dim;
  return std::max({int64_t(m.vocab) * C, int64_t(m.seq_len) * C, 4 * C * C});
}

ZeroSizes zero_sizes(const ZeroConfig& z, int64_t world_size, const ModelConfig* model) {
  const int64_t largest = model ? largest_tensor_numel(*model) : 1;
  const int64_t whole = model ? std::max<int64_t>(1, model->total_params()) : 1;
  const int64_t w = std::max<int64_t>(1, world_size);
  ZeroSizes s{z.reduce_bucket_size.value, z.allgather_bucket_size.value, z.sub_group_size.value};
  if (s.reduce_bucket == 0) s.reduce_bucket = largest;
  if (s.allgather_bucket == 0) s.allgather_bucket = whole;
  if (s.sub_group == 0) s.sub_group = (largest + w - 1) / w;
  return s;
}

}  // namespace zt
