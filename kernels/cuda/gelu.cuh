// GELU (tanh approximation, GPT-2's) forward and backward on bf16 buffers, fp32 math.
#pragma once

#include <cstddef>
#include <cuda_runtime.h>

namespace zt::cuda {

void gelu_forward(void* out, const void* inp, size_t n, cudaStream_t s);
void gelu_backward(void* dinp, const void* inp, const void* dout, size_t n, cudaStream_t s);  // dinp +=
// dpre = dact · gelu'(pre), dact fp32 (a GEMM product not yet rounded): one rounding, overwritten.
void gelu_backward_from_f32(void* dpre, const float* dact, const void* pre, size_t n, cudaStream_t s);

}  // namespace zt::cuda
