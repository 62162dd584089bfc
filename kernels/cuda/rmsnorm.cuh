// RMSNorm (Llama's: no mean, no bias, eps given) forward and backward over the last dim on bf16
// buffers; statistics and rstd fp32.
#pragma once

#include <cstddef>
#include <cuda_runtime.h>

namespace zt::cuda {

// out = w ∘ (x · rstd), rstd = 1/sqrt(mean(x²) + eps) [N] saved.
void rmsnorm_forward(void* out, float* rstd, const void* inp, const void* w, int N, int C, float eps, cudaStream_t s);
// resid = a + b (rounded to bf16, as residual_forward stores it; may alias a or b), then RMSNorm of
// the rounded row: one pass per row.
void residual_rmsnorm_forward(void* resid, void* out, float* rstd, const void* a, const void* b, const void* w, int N,
                              int C, float eps, cudaStream_t s);
// fp32 scratch floats rmsnorm_backward needs.
size_t rmsnorm_backward_scratch_floats(int N, int C);
// dinp += rstd·(w∘g − x̂·mean(w∘g∘x̂)), dw += Σ g∘x̂ (reduced in fixed order through `scratch`);
// either may be null.
void rmsnorm_backward(void* dinp, void* dw, const void* dout, const void* inp, const void* w, const float* rstd, int N,
                      int C, float* scratch, cudaStream_t s);

}  // namespace zt::cuda
