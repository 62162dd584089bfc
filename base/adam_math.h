// THE Adam/AdamW element formula and its per-step scalars: every implementation (the host reference
// in optim/, the SIMD CPU Adam in offload/, the CPU and CUDA backends' kernels) calls these, so they
// agree bit for bit (tests/optim/adam_parity_test.cpp; on a GPU tests/gpu/test_gpu_fused_adamw.cpp).
#pragma once

#include <cmath>
#include <stdexcept>
#include <string>

#include "base/optimizer.h"

#if defined(__CUDACC__)
#define ZT_HD __host__ __device__
#else
#define ZT_HD
#endif

namespace zt {

// Per-step scalars, computed once per step on the host in double from the fp32 hyper-parameters
// and rounded once to fp32 (bc = 1 - beta^step; both 1 without bias correction):
//   one_minus_beta1 = float(1 - beta1), one_minus_beta2 = float(1 - beta2)
//   step_size    = float(lr / bc1)             (lr without bias correction)
//   inv_sqrt_bc2 = float(1 / sqrt(bc2))        (1 without bias correction)
//   decay        = float(1 - lr * weight_decay) decoupled (AdamW); exactly 1 otherwise
//   l2_decay     = weight_decay                 L2 mode with weight_decay != 0 (then l2 is true)
struct AdamScalars {
  float beta1, one_minus_beta1, beta2, one_minus_beta2, eps;
  float grad_scale;
  float l2_decay;
  float decay;
  float step_size;
  float inv_sqrt_bc2;
  bool l2;
};

inline AdamScalars adam_scalars(const AdamWHyper& h) {
  if (h.step < 1) throw std::invalid_argument("adam: step must be >= 1 (it is 1-based), got " + std::to_string(h.step));
  AdamScalars c{};
  const double b1 = h.beta1, b2 = h.beta2, lr = h.lr, wd = h.weight_decay;
  c.beta1 = h.beta1;
  c.beta2 = h.beta2;
  c.one_minus_beta1 = static_cast<float>(1.0 - b1);
  c.one_minus_beta2 = static_cast<float>(1.0 - b2);
  c.eps = h.eps;
  c.grad_scale = h.grad_scale;
  c.l2 = !h.decoupled && h.weight_decay != 0.0f;
  c.l2_decay = c.l2 ? h.weight_decay : 0.0f;
  c.decay = h.decoupled ? static_cast<float>(1.0 - lr * wd) : 1.0f;
  if (h.bias_correction) {
    c.step_size = static_cast<float>(lr / (1.0 - std::pow(b1, h.step)));
    c.inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(1.0 - std::pow(b2, h.step)));
  } else {
    c.step_size = h.lr;
    c.inv_sqrt_bc2 = 1.0f;
  }
  return c;
}

// One element, every operation rounded to fp32 on its own — no fused multiply-add: host files
// build with -ffp-contract=off, CUDA files with --fmad=false (sqrtf and / are IEEE-rounded on both):
//   g' = g * grad_scale
//   g' = g' + l2_decay * p                 (L2 mode only)
//   m  = beta1 * m + one_minus_beta1 * g'
//   v  = beta2 * v + one_minus_beta2 * (g' * g')
//   denom = sqrtf(v) * inv_sqrt_bc2 + eps
//   p  = p * decay                         (decoupled weight decay, before the update; 1 otherwise)
//   p  = p - step_size * (m / denom)
// The SIMD paths do the same operations lane by lane in this order.
ZT_HD inline void adam_update_element(float& p, float g, float& m, float& v, const AdamScalars& s) {
  float gs = g * s.grad_scale;
  if (s.l2) gs = gs + s.l2_decay * p;
  const float mi = s.beta1 * m + s.one_minus_beta1 * gs;
  const float vi = s.beta2 * v + s.one_minus_beta2 * (gs * gs);
  const float denom = sqrtf(vi) * s.inv_sqrt_bc2 + s.eps;
  float pi = p * s.decay;
  pi = pi - s.step_size * (mi / denom);
  m = mi;
  v = vi;
  p = pi;
}

}  // namespace zt
