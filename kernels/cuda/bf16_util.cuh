// Device helpers shared by the CUDA kernels: load any act buffer element as fp32 and store fp32
// into bf16 with round-to-nearest-even (cuda_bf16's __float2bfloat16_rn), plus block reductions.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace zt::cuda {

using bf16 = __nv_bfloat16;

__device__ __forceinline__ float ld(const bf16* p, size_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void st(bf16* p, size_t i, float x) { p[i] = __float2bfloat16_rn(x); }
// p[i] += x with one rounding of the fp32 sum.
__device__ __forceinline__ void st_add(bf16* p, size_t i, float x) {
  p[i] = __float2bfloat16_rn(__bfloat162float(p[i]) + x);
}

__device__ __forceinline__ float warp_sum(float x) {
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}
__device__ __forceinline__ float warp_max(float x) {
  for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}

// Block-wide sum/max in a fixed order (deterministic). `shared` holds >= 32 floats; every thread
// of the block must call it; the result is returned to every thread.
__device__ __forceinline__ float block_sum(float x, float* shared) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31) >> 5;
  x = warp_sum(x);
  __syncthreads();
  if (lane == 0) shared[warp] = x;
  __syncthreads();
  float r = lane < nwarps ? shared[lane] : 0.0f;
  r = warp_sum(r);
  return r;
}
__device__ __forceinline__ float block_max(float x, float* shared) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31) >> 5;
  x = warp_max(x);
  __syncthreads();
  if (lane == 0) shared[warp] = x;
  __syncthreads();
  float r = lane < nwarps ? shared[lane] : -INFINITY;
  r = warp_max(r);
  return r;
}

inline unsigned grid_for(size_t n, unsigned block) {
  size_t g = (n + block - 1) / block;
  return static_cast<unsigned>(g < 65535u * 16u ? (g == 0 ? 1 : g) : 65535u * 16u);
}

}  // namespace zt::cuda
