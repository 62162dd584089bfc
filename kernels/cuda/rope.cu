// RoPE kernels: one thread per rotated pair (i, i + hd/2) of one head of one row; the pair is read,
// rotated in fp32 with the fp32 table and written back with one bf16 rounding each.
#include <stdexcept>
#include <string>

#include "base/cuda_check.h"
#include "kernels/cuda/bf16_util.cuh"
#include "kernels/cuda/rope.cuh"

namespace zt::cuda {

template <bool kInverse>
__global__ void rope_kernel(bf16* x, const float* cos, const float* sin, int T, int heads, int half,
                            size_t row_stride, size_t pairs) {
  for (size_t p = blockIdx.x * (size_t)blockDim.x + threadIdx.x; p < pairs; p += (size_t)gridDim.x * blockDim.x) {
    const int i = int(p % half);
    const size_t hr = p / half;  // (row, head)
    const int h = int(hr % heads);
    const size_t row = hr / heads;
    const int t = int(row % T);
    const float c = cos[(size_t)t * half + i], s = sin[(size_t)t * half + i];
    bf16* a = x + row * row_stride + (size_t)h * 2 * half + i;
    bf16* b = a + half;
    const float x1 = __bfloat162float(*a), x2 = __bfloat162float(*b);
    if (!kInverse) {
      *a = __float2bfloat16_rn(x1 * c - x2 * s);
      *b = __float2bfloat16_rn(x2 * c + x1 * s);
    } else {
      *a = __float2bfloat16_rn(x1 * c + x2 * s);
      *b = __float2bfloat16_rn(x2 * c - x1 * s);
    }
  }
}

namespace {
void check(int heads, int hd, int row_stride) {
  if (hd < 2 || hd % 2 != 0 || heads < 0 || (long long)heads * hd > row_stride)
    throw std::invalid_argument("rope: head size " + std::to_string(hd) + " must be even and " +
                                std::to_string(heads) + " heads must fit the row of " + std::to_string(row_stride));
}

template <bool kInverse>
void launch(void* x, const float* cos, const float* sin, int B, int T, int heads, int hd, int row_stride,
            cudaStream_t s) {
  check(heads, hd, row_stride);
  const size_t pairs = (size_t)B * T * heads * (hd / 2);
  if (pairs == 0) return;
  rope_kernel<kInverse><<<grid_for(pairs, 256), 256, 0, s>>>(static_cast<bf16*>(x), cos, sin, T, heads, hd / 2,
                                                            (size_t)row_stride, pairs);
  ZT_LAUNCH_CHECK();
}
}  // namespace

void rope_forward(void* x, const float* cos, const float* sin, int B, int T, int heads, int hd, int row_stride,
                  cudaStream_t s) {
  launch<false>(x, cos, sin, B, T, heads, hd, row_stride, s);
}

void rope_backward(void* dx, const float* cos, const float* sin, int B, int T, int heads, int hd, int row_stride,
                   cudaStream_t s) {
  launch<true>(dx, cos, sin, B, T, heads, hd, row_stride, s);
}

}  // namespace zt::cuda
