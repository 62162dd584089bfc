// CPU AdamW on a flat fp32 span (the simple reference version; the SIMD one lives in offload/).
#include <cmath>

#include "kernels/cpu/cpu_ops.h"

namespace zt::cpu {

void adamw_step(float* p, const float* g, float* m, float* v, size_t n, const AdamWHyper& h) {
  const float bc1 = h.bias_correction ? 1.0f - std::pow(h.beta1, float(h.step)) : 1.0f;
  const float bc2 = h.bias_correction ? 1.0f - std::pow(h.beta2, float(h.step)) : 1.0f;
  const float step_size = h.lr / bc1;
  const float inv_sqrt_bc2 = 1.0f / std::sqrt(bc2);
  const float decay = h.decoupled ? 1.0f - h.lr * h.weight_decay : 1.0f;
  const float l2 = h.decoupled ? 0.0f : h.weight_decay;
#pragma omp parallel for simd schedule(static)
  for (size_t i = 0; i < n; ++i) {
    const float grad = g[i] * h.grad_scale + l2 * p[i];
    const float mi = h.beta1 * m[i] + (1.0f - h.beta1) * grad;
    const float vi = h.beta2 * v[i] + (1.0f - h.beta2) * grad * grad;
    m[i] = mi;
    v[i] = vi;
    const float denom = std::sqrt(vi) * inv_sqrt_bc2 + h.eps;
    p[i] = p[i] * decay - step_size * mi / denom;
  }
}

}  // namespace zt::cpu
