// The simple AdamW step on a flat fp32 span (params, grads, moments all fp32), with the scalars of
// base/adam_math.h that the fused multi-tensor kernel shares.
#pragma once

#include <cstddef>
#include <cuda_runtime.h>

#include "base/adam_math.h"
#include "kernels/backend.h"

namespace zt::cuda {

void adamw_step(float* p, const float* g, float* m, float* v, size_t n, const AdamWHyper& h, cudaStream_t s);

}  // namespace zt::cuda
