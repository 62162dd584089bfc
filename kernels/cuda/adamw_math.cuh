// The per-element AdamW update shared by the simple and the fused kernels (device code only),
// so both compute bit-identical results from the same inputs.
#pragma once

#include "kernels/cuda/adamw.cuh"

namespace zt::cuda {

// Updates p, m, v in place for one element with gradient g (unscaled).
__device__ __forceinline__ void adamw_element(float& p, float& m, float& v, float g, const AdamWScalars& k) {
  g *= k.grad_scale;
  if (!k.decoupled) g += k.weight_decay * p;
  m = k.beta1 * m + (1.0f - k.beta1) * g;
  v = k.beta2 * v + (1.0f - k.beta2) * g * g;
  const float mhat = m * k.inv_bc1, vhat = v * k.inv_bc2;
  float upd = mhat / (sqrtf(vhat) + k.eps);
  if (k.decoupled) upd += k.weight_decay * p;
  p -= k.lr * upd;
}

}  // namespace zt::cuda
