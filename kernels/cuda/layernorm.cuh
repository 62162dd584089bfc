// LayerNorm (eps 1e-5) forward and backward over the last dim on bf16 buffers; mean/rstd fp32.
#pragma once

#include <cstddef>
#include <cuda_runtime.h>

namespace zt::cuda {

void layernorm_forward(void* out, float* mean, float* rstd, const void* inp, const void* w, const void* b, int N,
                       int C, cudaStream_t s);
// resid = a + b (may alias a or b), out = LayerNorm(resid): one pass per row.
void residual_layernorm_forward(void* resid, void* out, float* mean, float* rstd, const void* a, const void* b,
                                const void* w, const void* bias, int N, int C, cudaStream_t s);
// fp32 scratch floats layernorm_backward needs.
size_t layernorm_backward_scratch_floats(int N, int C);
// dinp += ..., dw += Σ dout·x̂, db += Σ dout (dw/db reduced in fixed order through `scratch`).
void layernorm_backward(void* dinp, void* dw, void* db, const void* dout, const void* inp, const void* w,
                        const float* mean, const float* rstd, int N, int C, float* scratch, cudaStream_t s);

}  // namespace zt::cuda
