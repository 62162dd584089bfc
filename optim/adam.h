// Adam / AdamW over flat fp32 spans: the reference step, and the exact per-element operation order
// every Adam path (SIMD CPU Adam, fused GPU AdamW) follows so that all of them agree bitwise.
#pragma once

#include <cmath>
#include <cstddef>
#include <span>
#include <string>

#include "kernels/backend.h"  // zt::AdamWHyper, the shared per-call hyper-parameters

#if defined(__CUDACC__)
#define ZT_OPTIM_HD __host__ __device__
#else
#define ZT_OPTIM_HD
#endif

namespace zt {

// DeepSpeed's adam_w_mode: type "AdamW" is always decoupled; type "Adam" is AdamW unless
// adam_w_mode is false (then weight decay is L2: wd * p added to the gradient).
inline bool adam_decoupled(const std::string& type, bool adam_w_mode) { return type == "AdamW" || adam_w_mode; }

// This is the order documented by the SIMD CPU Adam (offload/cpu_adam.h); keep the two identical.
// Per-step scalars, computed once per call on the host in double from the fp32 hyper-parameters
// and rounded once to fp32 (bc = 1 - beta^step; both 1 when !bias_correction):
//   one_minus_b1 = float(1 - beta1),  one_minus_b2 = float(1 - beta2)
//   step_size    = float(lr / bc1)
//   inv_sqrt_bc2 = float(1 / sqrt(bc2))
//   decay        = float(1 - lr * weight_decay)  (decoupled; exactly 1 otherwise)
//   l2           = weight_decay                  (L2 mode with weight_decay != 0; else 0 = off)
struct AdamScalars {
  float beta1, beta2, one_minus_b1, one_minus_b2, eps;
  float step_size, inv_sqrt_bc2, decay, l2, grad_scale;
};
AdamScalars adam_scalars(const AdamWHyper& h);  // throws std::invalid_argument if step < 1

// THE operation order, one element, every operation rounded to fp32 (no FMA contraction: compile
// with -ffp-contract=off; CUDA code calls this with --fmad=false or uses __fmul_rn/__fadd_rn):
//   g' = g * grad_scale
//   g' = g' + l2 * p                       (L2 mode only)
//   m  = beta1 * m + one_minus_b1 * g'
//   v  = beta2 * v + one_minus_b2 * (g' * g')
//   denom = sqrtf(v) * inv_sqrt_bc2 + eps
//   p  = p * decay                         (decoupled weight decay, before the update; 1 otherwise)
//   p  = p - step_size * (m / denom)
ZT_OPTIM_HD inline void adam_update_element(float& p, float g, float& m, float& v, const AdamScalars& s) {
  float gs = g * s.grad_scale;
  if (s.l2 != 0.0f) gs = gs + s.l2 * p;
  const float mi = s.beta1 * m + s.one_minus_b1 * gs;
  const float vi = s.beta2 * v + s.one_minus_b2 * (gs * gs);
  const float denom = sqrtf(vi) * s.inv_sqrt_bc2 + s.eps;
  float pi = p * s.decay;
  pi = pi - s.step_size * (mi / denom);
  m = mi;
  v = vi;
  p = pi;
}

// One Adam/AdamW step over a shard: p, g, m, v are the same length (std::invalid_argument if not).
// Element-wise, so the result does not depend on the thread count or on how the span is split.
void adam_step(std::span<float> p, std::span<const float> g, std::span<float> m, std::span<float> v,
               const AdamWHyper& h);

}  // namespace zt
