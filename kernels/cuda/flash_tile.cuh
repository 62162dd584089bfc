// What the flash-attention kernels share: the tile shape (64 rows, 4 warps of 16 rows each), the
// padded shared-memory row, the cp.async tile and vector loaders, and the layout of `saved`.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "kernels/cuda/warp_mma.cuh"

namespace zt::cuda::flash {

using bf16 = __nv_bfloat16;

constexpr int kTile = 64;     // query rows per block (and key rows per step); 16 per warp
constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;

// One 64 x HS bf16 tile in shared memory. Rows are padded by 8 elements (16 bytes), so the 8 rows
// one ldmatrix phase reads start in 8 different 4-bank groups: no bank conflicts for HS = 16..128.
template <int HS>
struct Tile {
  static constexpr int kLd = HS + 8;
  static constexpr int kElems = kTile * kLd;
  static constexpr size_t kBytes = size_t(kElems) * sizeof(bf16);
};

inline int tiles_for(int T) { return (T + kTile - 1) / kTile; }

// Throws std::invalid_argument (naming `what`) for an unsupported head size, NKV not dividing NH, a
// grid too large, or a buffer that is not 16-byte aligned (cp.async moves 16-byte pieces).
void check_args(const char* what, int B, int T, int C, int NH, int NKV, std::initializer_list<const void*> ptrs);

// `saved` (what forward leaves for backward): the base-2 log-sum-exp of the scaled scores of every
// row, fp32 [B, NH, T], then a bf16 copy of the output [B, T, C] (backward's D = rowsum(dO * O)),
// starting 256-byte aligned.
inline size_t saved_lse_bytes(int B, int T, int NH) {
  const size_t b = size_t(B) * size_t(NH) * size_t(T) * sizeof(float);
  return (b + 255) / 256 * 256;
}
inline size_t saved_bytes(int B, int T, int C, int NH) {
  return saved_lse_bytes(B, T, NH) + size_t(B) * size_t(T) * size_t(C) * sizeof(bf16);
}

// Where query head h of batch b lives (grouped-query layout, Backend::attention_forward): element
// offsets of its row 0 in qkv [B, T, W] with W = (NH + 2·NKV)·HS — q of head h, then k and v of its
// key/value head h / (NH / NKV) — and in a [B, T, C] tensor (out, dout), and the row stride W.
// NKV == NH: W = 3C, k C after q, v 2C after q (GPT-2's layout).
template <int HS>
struct HeadRows {
  size_t C3, qkv, k, v, bt;
  __device__ HeadRows(int T, int C, int NH, int NKV, int h, int b)
      : C3(size_t(C) + 2 * size_t(NKV) * HS),
        qkv(size_t(b) * T * C3 + size_t(h) * HS),
        k(size_t(b) * T * C3 + size_t(C) + size_t(h / (NH / NKV)) * HS),
        v(k + size_t(NKV) * HS),
        bt(size_t(b) * T * C + size_t(h) * HS) {}
};

// Starts cp.async copies of rows row0..row0+63 (columns 0..HS-1) of a row-major bf16 matrix with
// `stride` elements per row into `tile`; rows at or past T are zero-filled. Every thread calls it.
template <int HS>
__device__ __forceinline__ void load_tile_async(bf16* tile, const bf16* src, size_t stride, int row0, int T) {
  constexpr int kChunks = HS / 8;  // 16-byte pieces per row
  static_assert(kTile * kChunks % kThreads == 0, "every thread copies the same number of pieces");
#pragma unroll
  for (int it = 0; it < kTile * kChunks / kThreads; ++it) {
    const int c = it * kThreads + int(threadIdx.x);
    const int r = c / kChunks, col = (c % kChunks) * 8;
    const int row = row0 + r;
    const bool valid = row < T;
    mma::cp_async16(tile + r * Tile<HS>::kLd + col, src + size_t(valid ? row : 0) * stride + col, valid);
  }
}

// The key loop's pipeline step at key tile j of 0..last (K and V double-buffered, tile 0 already
// issued): starts tile j+1 into the other buffer (free since the last step's closing barrier), waits
// until tile j (and everything committed before it) has landed, and syncs the block.
template <int HS>
__device__ __forceinline__ void step_kv_tiles(bf16* sK, bf16* sV, const bf16* k_src, const bf16* v_src,
                                              size_t stride, int j, int last, int T) {
  const int other = ((j & 1) ^ 1) * Tile<HS>::kElems;
  if (j < last) {
    load_tile_async<HS>(sK + other, k_src, stride, (j + 1) * kTile, T);
    load_tile_async<HS>(sV + other, v_src, stride, (j + 1) * kTile, T);
    mma::cp_async_commit();
    mma::cp_async_wait<1>();
  } else {
    mma::cp_async_wait<0>();
  }
  __syncthreads();
}

// Starts cp.async copies of src[row0 .. row0+63] (fp32) into dst[0..63], zeros past T; threads
// first..first+63 do it (others return).
__device__ __forceinline__ void load_vec_async(float* dst, const float* src, int row0, int T, int first) {
  const int i = int(threadIdx.x) - first;
  if (i < 0 || i >= kTile) return;
  const bool valid = row0 + i < T;
  mma::cp_async4(dst + i, src + (valid ? row0 + i : 0), valid);
}

// Shared-memory byte offsets of the ldmatrix row a lane addresses, for a 16-row x 16-column block
// at (r0, c0) of a tile with row length LD:
//   a_rows: the A-operand order (matrices: rows 0-7/8-15 at column 0, then at column 8);
//   b_rows: B operands stored [n][k] (two n-tiles of 8 rows, each at k 0 and k 8);
//   bt_rows: B operands stored [k][n], loaded transposed (k 0-7/8-15 at n 0, then at n 8).
template <int LD>
__device__ __forceinline__ int a_rows(int lane, int r0, int c0) {
  return (r0 + (lane & 15)) * LD + c0 + (lane >> 4) * 8;
}
template <int LD>
__device__ __forceinline__ int b_rows(int lane, int r0, int c0) {
  return (r0 + (lane & 7) + ((lane >> 4) << 3)) * LD + c0 + ((lane >> 3) & 1) * 8;
}
template <int LD>
__device__ __forceinline__ int bt_rows(int lane, int r0, int c0) {
  return (r0 + (lane & 7) + (((lane >> 3) & 1) << 3)) * LD + c0 + (lane >> 4) * 8;
}

// acc[0..N) += A(16 x 16k, fragments a[KS]) . Bᵀ where B is the 64-row tile `b` stored [n][k]
// (n = the 64 rows, k = HS columns): the score-like products S = Q Kᵀ, dP = dO Vᵀ.
template <int HS>
__device__ __forceinline__ void mma_a_bt(float (&acc)[8][4], const uint32_t (&a)[HS / 16][4], const bf16* b,
                                         int lane) {
  constexpr int LD = Tile<HS>::kLd;
#pragma unroll
  for (int kk = 0; kk < HS / 16; ++kk) {
#pragma unroll
    for (int np = 0; np < 4; ++np) {
      uint32_t f[4];
      mma::ldmatrix_x4(f, b + b_rows<LD>(lane, np * 16, kk * 16));
      mma::mma_bf16(acc[2 * np], a[kk], f[0], f[1]);
      mma::mma_bf16(acc[2 * np + 1], a[kk], f[2], f[3]);
    }
  }
}

// acc[HS/8] += P(16 x 64, fp32 accumulators p[8], rounded to bf16) . B where B is the 64-row tile
// `b` stored [k][n] (k = the 64 rows, n = HS columns): the value-like products O = P V, dQ = dS K,
// dV = Pᵀ dO, dK = dSᵀ Q.
template <int HS>
__device__ __forceinline__ void mma_p_b(float (&acc)[HS / 8][4], const float (&p)[8][4], const bf16* b, int lane) {
  constexpr int LD = Tile<HS>::kLd;
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
    uint32_t a[4];
    mma::acc_to_a(a, p[2 * kk], p[2 * kk + 1]);
#pragma unroll
    for (int dp = 0; dp < HS / 16; ++dp) {
      uint32_t f[4];
      mma::ldmatrix_x4_trans(f, b + bt_rows<LD>(lane, kk * 16, dp * 16));
      mma::mma_bf16(acc[2 * dp], a, f[0], f[1]);
      mma::mma_bf16(acc[2 * dp + 1], a, f[2], f[3]);
    }
  }
}

// Loads a warp's 16 rows (r0..r0+15) x HS of `tile` as A fragments.
template <int HS>
__device__ __forceinline__ void load_a(uint32_t (&a)[HS / 16][4], const bf16* tile, int r0, int lane) {
#pragma unroll
  for (int kk = 0; kk < HS / 16; ++kk) mma::ldmatrix_x4(a[kk], tile + a_rows<Tile<HS>::kLd>(lane, r0, kk * 16));
}

// row[c] += v (two adjacent bf16 at an even column c) with one rounding of the fp32 sum.
__device__ __forceinline__ void add_bf16x2(bf16* row, int c, float v0, float v1) {
  __nv_bfloat162* p = reinterpret_cast<__nv_bfloat162*>(row + c);
  const float2 old = __bfloat1622float2(*p);
  *p = __floats2bfloat162_rn(old.x + v0, old.y + v1);
}
__device__ __forceinline__ void store_bf16x2(bf16* row, int c, float v0, float v1) {
  *reinterpret_cast<__nv_bfloat162*>(row + c) = __floats2bfloat162_rn(v0, v1);
}

__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

}  // namespace zt::cuda::flash
