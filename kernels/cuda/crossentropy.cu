// Cross-entropy kernels: a one-block count of valid targets, then one block per row: an online
// softmax pass for (max, sum), the loss, and the gradient row written in place over padded rows.
#include "kernels/cuda/bf16_util.cuh"
#include "kernels/cuda/crossentropy.cuh"
#include "base/cuda_check.h"

namespace zt::cuda {

__global__ void count_valid_kernel(int* count, const int32_t* targets, int N) {
  __shared__ float red[32];
  float c = 0.0f;  // exact in fp32 for N < 2^24
  for (int i = threadIdx.x; i < N; i += blockDim.x) c += targets[i] >= 0 ? 1.0f : 0.0f;
  c = block_sum(c, red);
  if (threadIdx.x == 0) *count = static_cast<int>(c);
}

// Running (max, sum of exp(x - max)) pairs: merged in any grouping they give the same softmax
// denominator up to rounding; -inf marks an empty pair.
struct MaxSum {
  float m, s;
};
__device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b) {
  if (a.m == -INFINITY) return b;
  if (b.m == -INFINITY) return a;
  const float m = fmaxf(a.m, b.m);
  return {m, a.s * __expf(a.m - m) + b.s * __expf(b.m - m)};
}
__device__ __forceinline__ MaxSum warp_merge(MaxSum x) {
  for (int o = 16; o > 0; o >>= 1) {
    MaxSum y{__shfl_xor_sync(0xffffffffu, x.m, o), __shfl_xor_sync(0xffffffffu, x.s, o)};
    x = merge(x, y);
  }
  return x;
}
// Block-wide merge in a fixed order; every thread gets the result. shared: >= 32 pairs.
__device__ __forceinline__ MaxSum block_merge(MaxSum x, MaxSum* shared) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31) >> 5;
  x = warp_merge(x);
  __syncthreads();
  if (lane == 0) shared[warp] = x;
  __syncthreads();
  MaxSum r = lane < nwarps ? shared[lane] : MaxSum{-INFINITY, 0.0f};
  return warp_merge(r);
}

// One block per row; the row is read once for (max, sum) by an online softmax and once more to
// write the gradient, which may overwrite the logits (each element is read, then written, by the
// same thread; the target's logit is read before the block-wide barrier). Columns V..Vp: zero.
__global__ void crossentropy_kernel(float* losses, bf16* dlogits, const bf16* logits, const int32_t* targets, int V,
                                    int Vp, float dloss, const int* count) {
  __shared__ MaxSum red[32];
  const int row = blockIdx.x;
  const int tgt = targets[row];
  const bf16* x = logits + (size_t)row * Vp;
  bf16* dx = dlogits + (size_t)row * Vp;
  if (tgt < 0) {
    for (int i = threadIdx.x; i < Vp; i += blockDim.x) st(dx, i, 0.0f);
    if (threadIdx.x == 0) losses[row] = 0.0f;
    return;
  }
  const float xt = threadIdx.x == 0 ? ld(x, tgt) : 0.0f;
  MaxSum acc{-INFINITY, 0.0f};
  for (int i = threadIdx.x; i < V; i += blockDim.x) {
    const float v = ld(x, i);
    if (v > acc.m) {
      acc.s = acc.s * __expf(acc.m - v) + 1.0f;  // exp(-inf) = 0 on the first element
      acc.m = v;
    } else {
      acc.s += __expf(v - acc.m);
    }
  }
  const MaxSum tot = block_merge(acc, red);
  if (threadIdx.x == 0) losses[row] = tot.m + logf(tot.s) - xt;
  const float scale = dloss / static_cast<float>(*count);
  const float inv = 1.0f / tot.s;
  for (int i = threadIdx.x; i < V; i += blockDim.x) {
    const float p = __expf(ld(x, i) - tot.m) * inv;
    st(dx, i, (p - (i == tgt ? 1.0f : 0.0f)) * scale);
  }
  for (int i = V + threadIdx.x; i < Vp; i += blockDim.x) st(dx, i, 0.0f);
}

void crossentropy_forward_backward(float* losses, void* dlogits, const void* logits, const int32_t* targets, int N,
                                   int V, int Vp, float dloss, int* scratch_count, cudaStream_t s) {
  if (N <= 0) return;
  count_valid_kernel<<<1, 1024, 0, s>>>(scratch_count, targets, N);
  ZT_LAUNCH_CHECK();
  crossentropy_kernel<<<N, 512, 0, s>>>(losses, static_cast<bf16*>(dlogits), static_cast<const bf16*>(logits),
                                        targets, V, Vp, dloss, scratch_count);
  ZT_LAUNCH_CHECK();
}

}  // namespace zt::cuda
