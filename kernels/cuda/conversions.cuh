// Conversions between fp32 and bf16 device buffers (round to nearest even; NaN stays NaN, inf
// stays inf, subnormals are kept), launched on the caller's stream.
#pragma once

#include <cstddef>
#include <cuda_runtime.h>

namespace zt::cuda {

void f32_to_bf16(void* dst_bf16, const float* src, size_t n, cudaStream_t s);
void bf16_to_f32(float* dst, const void* src_bf16, size_t n, cudaStream_t s);

}  // namespace zt::cuda
