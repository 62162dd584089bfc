// Deterministic column sums for parameter gradients (bias, LayerNorm weight/bias): a fixed-order
// two-pass reduction over rows through an fp32 scratch, without atomics. Device code: .cu only.
#pragma once

#include "kernels/cuda/bf16_util.cuh"
#include "base/cuda_check.h"

namespace zt::cuda {

constexpr int kColTile = 32;       // columns per block (one warp-width, coalesced)
constexpr int kRowLanes = 8;       // row lanes per block
constexpr int kMaxRowChunks = 64;  // blocks along the rows

inline int column_reduce_chunks(int N) {
  int c = (N + 127) / 128;
  return c < 1 ? 1 : (c > kMaxRowChunks ? kMaxRowChunks : c);
}
// fp32 scratch elements one column_reduce call needs per output vector.
inline size_t column_reduce_scratch_floats(int N, int C) { return (size_t)column_reduce_chunks(N) * C; }

// Pass 1: partial[K][chunk][c] = Σ over this chunk's rows of f(r, c, k) for K outputs.
template <int K, class F>
__global__ void column_partial_kernel(float* partial, int N, int C, int rows_per_chunk, F f) {
  __shared__ float sh[K][kRowLanes][kColTile];
  const int c = blockIdx.x * kColTile + threadIdx.x;
  const int chunk = blockIdx.y;
  const int r0 = chunk * rows_per_chunk, r1 = min(N, r0 + rows_per_chunk);
  float acc[K];
  for (int k = 0; k < K; ++k) acc[k] = 0.0f;
  if (c < C) {
    for (int r = r0 + threadIdx.y; r < r1; r += kRowLanes) {
      float v[K];
      f(r, c, v);
      for (int k = 0; k < K; ++k) acc[k] += v[k];
    }
  }
  for (int k = 0; k < K; ++k) sh[k][threadIdx.y][threadIdx.x] = acc[k];
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    for (int k = 0; k < K; ++k) {
      float s = 0.0f;
      for (int y = 0; y < kRowLanes; ++y) s += sh[k][y][threadIdx.x];
      partial[((size_t)k * gridDim.y + chunk) * C + c] = s;
    }
  }
}

// Pass 2: out_k[c] += Σ_chunk partial[k][chunk][c] (fixed order; one bf16 rounding).
template <int K>
__global__ void column_final_kernel(bf16* out0, bf16* out1, const float* partial, int chunks, int C) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  for (int k = 0; k < K; ++k) {
    bf16* out = k == 0 ? out0 : out1;
    if (!out) continue;
    float s = 0.0f;
    for (int j = 0; j < chunks; ++j) s += partial[((size_t)k * chunks + j) * C + c];
    st_add(out, c, s);
  }
}

// Sums f(r, c, v[K]) over rows r < N into out0 (k = 0) and out1 (k = 1, when K == 2).
// `scratch` holds K * column_reduce_scratch_floats(N, C) floats.
template <int K, class F>
void column_reduce(bf16* out0, bf16* out1, float* scratch, int N, int C, F f, cudaStream_t s) {
  if (N <= 0 || C <= 0) return;
  const int chunks = column_reduce_chunks(N);
  const int rows_per_chunk = (N + chunks - 1) / chunks;
  dim3 grid((C + kColTile - 1) / kColTile, chunks), block(kColTile, kRowLanes);
  column_partial_kernel<K><<<grid, block, 0, s>>>(scratch, N, C, rows_per_chunk, f);
  ZT_LAUNCH_CHECK();
  column_final_kernel<K><<<(C + 255) / 256, 256, 0, s>>>(out0, out1, scratch, chunks, C);
  ZT_LAUNCH_CHECK();
}

}  // namespace zt::cuda
