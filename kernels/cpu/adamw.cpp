// CPU AdamW on a flat fp32 span: base/adam_math.h's element formula over OpenMP threads (the SIMD
// CPU Adam in offload/ computes the same bits faster).
#include "base/adam_math.h"
#include "kernels/cpu/cpu_ops.h"

namespace zt::cpu {

void adamw_step(float* p, const float* g, float* m, float* v, size_t n, const AdamWHyper& h) {
  const AdamScalars s = adam_scalars(h);
  const long long nn = static_cast<long long>(n);
#pragma omp parallel for schedule(static) if (nn > (1 << 16))
  for (long long i = 0; i < nn; ++i) adam_update_element(p[i], g[i], m[i], v[i], s);
}

}  // namespace zt::cpu
