// Embedding kernels. Backward of wte without atomics: the block of a token's FIRST position owns
// that token's row, sums every position holding the token in position order (fp32), adds once.
#include "kernels/cuda/bf16_util.cuh"
#include "base/cuda_check.h"
#include "kernels/cuda/embedding.cuh"

namespace zt::cuda {

__global__ void embedding_forward_kernel(bf16* out, const int32_t* tokens, const bf16* wte, const bf16* wpe,
                                         int BT, int T, int C) {
  const size_t n = (size_t)BT * C;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const int row = static_cast<int>(i / C), c = static_cast<int>(i % C);
    const int t = row % T;
    const float e = ld(wte, (size_t)tokens[row] * C + c);
    st(out, i, wpe ? e + ld(wpe, (size_t)t * C + c) : e);  // no position table (Llama): the row itself
  }
}

// dwpe[t,c] += Σ_b dout[b,t,c], fixed order over b.
__global__ void embedding_wpe_backward_kernel(bf16* dwpe, const bf16* dout, int B, int T, int C) {
  const size_t n = (size_t)T * C;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    float s = 0.0f;
    for (int b = 0; b < B; ++b) s += ld(dout, (size_t)b * n + i);
    st_add(dwpe, i, s);
  }
}

// One block per position i. Dynamic shared memory: C floats (the row accumulator).
__global__ void embedding_wte_backward_kernel(bf16* dwte, const bf16* dout, const int32_t* tokens, int BT, int C) {
  extern __shared__ float acc[];
  __shared__ int tile_tok[256];
  const int i = blockIdx.x;
  const int tok = tokens[i];
  // Is there an earlier position with the same token? Then that block owns the row.
  int earlier = 0;
  for (int j = threadIdx.x; j < i; j += blockDim.x) earlier |= (tokens[j] == tok);
  if (__syncthreads_or(earlier)) return;
  for (int c = threadIdx.x; c < C; c += blockDim.x) acc[c] = 0.0f;
  // Walk positions i..BT-1 in tiles; add matching rows in position order.
  for (int base = i; base < BT; base += 256) {
    __syncthreads();
    const int j = base + threadIdx.x;
    if (threadIdx.x < 256) tile_tok[threadIdx.x] = j < BT ? tokens[j] : -1;
    __syncthreads();
    const int lim = min(256, BT - base);
    for (int q = 0; q < lim; ++q) {
      if (tile_tok[q] != tok) continue;
      const size_t row = (size_t)(base + q) * C;
      for (int c = threadIdx.x; c < C; c += blockDim.x) acc[c] += ld(dout, row + c);
    }
  }
  for (int c = threadIdx.x; c < C; c += blockDim.x) st_add(dwte, (size_t)tok * C + c, acc[c]);
}

void embedding_forward(void* out, const int32_t* tokens, const void* wte, const void* wpe, int B, int T, int C,
                       cudaStream_t s) {
  const size_t n = (size_t)B * T * C;
  if (n == 0) return;
  embedding_forward_kernel<<<grid_for(n, 256), 256, 0, s>>>(static_cast<bf16*>(out), tokens,
                                                            static_cast<const bf16*>(wte),
                                                            static_cast<const bf16*>(wpe), B * T, T, C);
  ZT_LAUNCH_CHECK();
}

void embedding_backward(void* dwte, void* dwpe, const void* dout, const int32_t* tokens, int B, int T, int C,
                        cudaStream_t s) {
  if ((size_t)B * T * C == 0) return;
  const auto* d = static_cast<const bf16*>(dout);
  if (dwpe) {
    embedding_wpe_backward_kernel<<<grid_for((size_t)T * C, 256), 256, 0, s>>>(static_cast<bf16*>(dwpe), d, B, T, C);
    ZT_LAUNCH_CHECK();
  }
  if (dwte) {
    const size_t shmem = (size_t)C * sizeof(float);
    if (shmem > 48 * 1024)
      ZT_CUDA_CHECK(cudaFuncSetAttribute(embedding_wte_backward_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(shmem)));
    embedding_wte_backward_kernel<<<B * T, 256, shmem, s>>>(static_cast<bf16*>(dwte), d, tokens, B * T, C);
    ZT_LAUNCH_CHECK();
  }
}

}  // namespace zt::cuda
