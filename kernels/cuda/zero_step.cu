// The fixed-order sum of squares and the in-place scale of the ZeRO step on the device.
#include "kernels/cuda/zero_step.cuh"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "base/cuda_check.h"
#include "kernels/cuda/bf16_util.cuh"

namespace zt::cuda {

namespace {

constexpr int kThreads = 256;
constexpr size_t kBlockElems = 4096;

template <class T>
__device__ __forceinline__ float load(const T* x, size_t i);
template <>
__device__ __forceinline__ float load<float>(const float* x, size_t i) { return x[i]; }
template <>
__device__ __forceinline__ float load<bf16>(const bf16* x, size_t i) { return __bfloat162float(x[i]); }

// Fixed tree over kThreads doubles in shared memory; thread 0 returns the total.
__device__ double tree_sum(double v, double* sh) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w) sh[threadIdx.x] += sh[threadIdx.x + w];
    __syncthreads();
  }
  return sh[0];
}

template <class T>
__global__ void __launch_bounds__(kThreads) sumsq_blocks(const T* x, size_t n, float scale, double* partial) {
  __shared__ double sh[kThreads];
  const size_t lo = size_t(blockIdx.x) * kBlockElems;
  const size_t hi = min(n, lo + kBlockElems);
  double acc = 0.0;
  for (size_t i = lo + threadIdx.x; i < hi; i += kThreads) {
    const float y = __fmul_rn(load(x, i), scale);
    acc += double(y) * double(y);
  }
  const double total = tree_sum(acc, sh);
  if (threadIdx.x == 0) partial[blockIdx.x] = total;
}

__global__ void __launch_bounds__(kThreads) sumsq_final(const double* partial, size_t blocks, double* out) {
  __shared__ double sh[kThreads];
  double acc = 0.0;
  for (size_t b = threadIdx.x; b < blocks; b += kThreads) acc += partial[b];
  const double total = tree_sum(acc, sh);
  if (threadIdx.x == 0) *out = total;
}

template <class T>
__global__ void scale_kernel(T* x, size_t n, float s) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    if constexpr (sizeof(T) == 4) x[i] = __fmul_rn(x[i], s);
    else x[i] = __float2bfloat16_rn(__fmul_rn(__bfloat162float(x[i]), s));
  }
}

void check_type(DType t, const char* what) {
  if (t != DType::F32 && t != DType::BF16)
    throw std::invalid_argument(std::string("cuda ") + what + ": fp32 or bf16 buffers only, got " + dtype_name(t));
}

}  // namespace

size_t sum_squares_scratch_doubles(size_t n) { return (n + kBlockElems - 1) / kBlockElems + 1; }

void sum_squares(const void* x, DType t, size_t n, float scale, double* scratch, double* out, cudaStream_t s) {
  check_type(t, "sum_squares");
  const size_t blocks = (n + kBlockElems - 1) / kBlockElems;
  if (blocks == 0) {
    ZT_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(double), s));
    return;
  }
  if (t == DType::F32)
    sumsq_blocks<float><<<unsigned(blocks), kThreads, 0, s>>>(static_cast<const float*>(x), n, scale, scratch);
  else
    sumsq_blocks<bf16><<<unsigned(blocks), kThreads, 0, s>>>(static_cast<const bf16*>(x), n, scale, scratch);
  ZT_LAUNCH_CHECK();
  sumsq_final<<<1, kThreads, 0, s>>>(scratch, blocks, out);
  ZT_LAUNCH_CHECK();
}

void scale(void* x, DType t, float s, size_t n, cudaStream_t stream) {
  check_type(t, "scale");
  if (n == 0) return;
  const unsigned grid = unsigned(std::min<size_t>((n + 255) / 256, 65535));
  if (t == DType::F32) scale_kernel<float><<<grid, 256, 0, stream>>>(static_cast<float*>(x), n, s);
  else scale_kernel<bf16><<<grid, 256, 0, stream>>>(static_cast<bf16*>(x), n, s);
  ZT_LAUNCH_CHECK();
}

}  // namespace zt::cuda
