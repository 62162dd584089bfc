// Scalar CPU Adam path (any x86-64): the per-element update of adam_elem.h over a range, and the
// software fp32 -> bf16/fp16 conversion. Built with -ffp-contract=off -fno-math-errno.
#include "offload/adam_elem.h"
#include "offload/cpu_adam.h"

namespace zt::offload::detail {

void adam_range_scalar(float* p, const float* g, float* m, float* v, size_t n, const AdamConsts& c,
                       void* out, int out_kind) {
  adam_range_elems(p, g, m, v, 0, n, c, out, out_kind);
}

void convert_range_scalar(void* dst, int out_kind, const float* src, size_t n) {
  for (size_t i = 0; i < n; ++i) store_low(dst, out_kind, i, src[i]);
}

}  // namespace zt::offload::detail
