// The simple AdamW step on a flat fp32 span (params, grads, moments all fp32) and the host-side
// precomputation of the step's scalars, shared with the fused multi-tensor kernel.
#pragma once

#include <cstddef>
#include <cuda_runtime.h>

#include "kernels/backend.h"

namespace zt::cuda {

// Per-step scalars derived once on the host from AdamWHyper.
struct AdamWScalars {
  float lr, beta1, beta2, eps, weight_decay, grad_scale;
  float inv_bc1, inv_bc2;  // 1 / (1 − βᵗ), or 1 without bias correction
  int decoupled;
};
AdamWScalars adamw_scalars(const AdamWHyper& h);

void adamw_step(float* p, const float* g, float* m, float* v, size_t n, const AdamWHyper& h, cudaStream_t s);

}  // namespace zt::cuda
