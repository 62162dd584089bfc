// Cross-entropy kernels: a one-block count of valid targets, then one block per row computing
// max, log-sum-exp, the loss and the overwritten gradient row.
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

__global__ void crossentropy_kernel(float* losses, bf16* dlogits, const bf16* logits, const int32_t* targets, int V,
                                    float dloss, const int* count) {
  __shared__ float red[32];
  const int row = blockIdx.x;
  const int tgt = targets[row];
  const bf16* x = logits + (size_t)row * V;
  bf16* dx = dlogits + (size_t)row * V;
  if (tgt < 0) {
    for (int i = threadIdx.x; i < V; i += blockDim.x) st(dx, i, 0.0f);
    if (threadIdx.x == 0) losses[row] = 0.0f;
    return;
  }
  float mx = -INFINITY;
  for (int i = threadIdx.x; i < V; i += blockDim.x) mx = fmaxf(mx, ld(x, i));
  mx = block_max(mx, red);
  float sum = 0.0f;
  for (int i = threadIdx.x; i < V; i += blockDim.x) sum += __expf(ld(x, i) - mx);
  sum = block_sum(sum, red);
  const float lse = mx + logf(sum);
  if (threadIdx.x == 0) losses[row] = lse - ld(x, tgt);
  const float scale = dloss / static_cast<float>(*count);
  const float inv = 1.0f / sum;
  for (int i = threadIdx.x; i < V; i += blockDim.x) {
    float p = __expf(ld(x, i) - mx) * inv;
    st(dx, i, (p - (i == tgt ? 1.0f : 0.0f)) * scale);
  }
}

void crossentropy_forward_backward(float* losses, void* dlogits, const void* logits, const int32_t* targets, int N,
                                   int V, float dloss, int* scratch_count, cudaStream_t s) {
  if (N <= 0) return;
  count_valid_kernel<<<1, 1024, 0, s>>>(scratch_count, targets, N);
  ZT_LAUNCH_CHECK();
  crossentropy_kernel<<<N, 256, 0, s>>>(losses, static_cast<bf16*>(dlogits), static_cast<const bf16*>(logits),
                                        targets, V, dloss, scratch_count);
  ZT_LAUNCH_CHECK();
}

}  // namespace zt::cuda
