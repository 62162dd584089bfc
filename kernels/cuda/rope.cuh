// Rotary position embedding (rotate-half) on bf16 buffers, in place, with an fp32 cos/sin table
// [T, hd/2]; backward rotates the gradient by −θ in place (Backend::rope_forward/rope_backward).
#pragma once

#include <cuda_runtime.h>

namespace zt::cuda {

void rope_forward(void* x, const float* cos, const float* sin, int B, int T, int heads, int hd, int row_stride,
                  cudaStream_t s);
void rope_backward(void* dx, const float* cos, const float* sin, int B, int T, int heads, int hd, int row_stride,
                   cudaStream_t s);

}  // namespace zt::cuda
