// Kernels for fp32 <-> bf16 conversion (grid-stride loops, one rounding per element).
#include "kernels/cuda/bf16_util.cuh"
#include "kernels/cuda/conversions.cuh"
#include "base/cuda_check.h"

namespace zt::cuda {

__global__ void f32_to_bf16_kernel(bf16* dst, const float* src, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    dst[i] = __float2bfloat16_rn(src[i]);
}

__global__ void bf16_to_f32_kernel(float* dst, const bf16* src, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    dst[i] = __bfloat162float(src[i]);
}

void f32_to_bf16(void* dst, const float* src, size_t n, cudaStream_t s) {
  if (n == 0) return;
  f32_to_bf16_kernel<<<grid_for(n, 256), 256, 0, s>>>(static_cast<bf16*>(dst), src, n);
  ZT_LAUNCH_CHECK();
}

void bf16_to_f32(float* dst, const void* src, size_t n, cudaStream_t s) {
  if (n == 0) return;
  bf16_to_f32_kernel<<<grid_for(n, 256), 256, 0, s>>>(dst, static_cast<const bf16*>(src), n);
  ZT_LAUNCH_CHECK();
}

}  // namespace zt::cuda
