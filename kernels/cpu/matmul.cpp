// CPU linear layers through OpenBLAS sgemm over tiles fixed by the shape, each followed by its
// epilogue while the tile is in cache (bias; bias + GELU; GELU backward); the padded LM head.
#include <cblas.h>

#include <algorithm>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/simd.h"

namespace zt::cpu {

namespace {

// OpenBLAS's own threading does NOT give the same bits for every thread count (measured with
// OpenBLAS 0.3.21: e.g. a 96×29×160 sgemm differs between 1 and 2 threads). So OpenBLAS runs
// single-threaded (see cpu_backend.cpp) and we split C into tiles whose size depends only on the
// GEMM's shape, one single-threaded sgemm per tile, tiles spread over OpenMP threads: every
// element is computed by the same call whatever the thread count.
//
// Tile size: each sgemm call packs its A and B panels again, so tiles must be large (row chunks of
// 64 ran at 0.6-0.8 of one whole call at the GPT-2 shapes; 256 × 768 tiles at about 1.0), yet
// numerous enough to spread over cores: start at 256 rows × 768 columns and halve (columns to 192,
// then rows to 64) until there are at least kMinTiles.
constexpr int kMinTiles = 4;

struct Tiling {
  int rm, cn, row_tiles, col_tiles;
  Tiling(int M, int N) {
    rm = std::min(M, 256);
    cn = std::min(N, 768);
    auto count = [&] { return ((M + rm - 1) / rm) * ((N + cn - 1) / cn); };
    while (count() < kMinTiles && cn >= 384) cn /= 2;
    while (count() < kMinTiles && rm >= 128) rm /= 2;
    row_tiles = (M + rm - 1) / rm;
    col_tiles = (N + cn - 1) / cn;
  }
};

struct NoEpilogue {
  void operator()(int, int, int, int) const {}
};

// C[M,N] = op(A)[M,K]·op(B)[K,N] + beta·C, row-major; then epilogue(r0, rows, c0, cols) on each tile.
template <class Epilogue = NoEpilogue>
void gemm(bool trans_a, bool trans_b, int M, int N, int K, const float* A, int lda, const float* B, int ldb,
          float beta, float* C, int ldc, Epilogue epilogue = {}) {
  if (M <= 0 || N <= 0) return;
  const Tiling t(M, N);
  const int tiles = t.row_tiles * t.col_tiles;
#pragma omp parallel for schedule(dynamic, 1)
  for (int k = 0; k < tiles; ++k) {
    const int r0 = (k / t.col_tiles) * t.rm, c0 = (k % t.col_tiles) * t.cn;
    const int rows = std::min(t.rm, M - r0), cols = std::min(t.cn, N - c0);
    const float* a = trans_a ? A + r0 : A + int64_t(r0) * lda;
    const float* b = trans_b ? B + int64_t(c0) * ldb : B + c0;
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, rows, cols,
                K, 1.f, a, lda, b, ldb, beta, C + int64_t(r0) * ldc + c0, ldc);
    epilogue(r0, rows, c0, cols);
  }
}

// out[rows, cols] (rows ld apart) += bias[cols].
ZT_SIMD_INLINE void add_bias_body(float* out, const float* bias, int rows, int cols, int ld) {
  for (int r = 0; r < rows; ++r) {
    float* o = out + int64_t(r) * ld;
#pragma omp simd
    for (int c = 0; c < cols; ++c) o[c] = o[c] + bias[c];
  }
}
ZT_SIMD_DISPATCH(add_bias, (float* out, const float* bias, int rows, int cols, int ld), (out, bias, rows, cols, ld))

// dbias += Σ_rows dout, one channel chunk per task, rows in order.
void bias_grad(float* dbias, const float* dout, int N, int OC) {
  const int chunks = (OC + kChannelChunk - 1) / kChannelChunk;
#pragma omp parallel for schedule(static)
  for (int ch = 0; ch < chunks; ++ch) {
    const int c0 = ch * kChannelChunk, c1 = std::min(OC, c0 + kChannelChunk);
    for (int n = 0; n < N; ++n) {
      const float* g = dout + int64_t(n) * OC;
      for (int c = c0; c < c1; ++c) dbias[c] += g[c];
    }
  }
}

}  // namespace

void matmul_forward(float* out, const float* inp, const float* w, const float* bias, int N, int IC, int OC) {
  // out[N,OC] = inp[N,IC] · W[OC,IC]ᵀ, then + bias on each chunk
  gemm(false, true, N, OC, IC, inp, IC, w, IC, 0.f, out, OC, [&](int r0, int rows, int c0, int cols) {
    if (bias) add_bias(out + int64_t(r0) * OC + c0, bias + c0, rows, cols, OC);
  });
}

void matmul_backward(float* dinp, float* dw, float* dbias, const float* dout, const float* inp, const float* w,
                     int N, int IC, int OC) {
  // dinp[N,IC] += dout[N,OC] · W[OC,IC]
  if (dinp) gemm(false, false, N, IC, OC, dout, OC, w, IC, 1.f, dinp, IC);
  // dW[OC,IC] += dout[N,OC]ᵀ · inp[N,IC]
  if (dw) gemm(true, false, OC, IC, N, dout, OC, inp, IC, 1.f, dw, IC);
  if (dbias) bias_grad(dbias, dout, N, OC);
}

void matmul_bias_gelu_forward(float* out, float* pre, const float* inp, const float* w, const float* bias, int N,
                              int IC, int OC) {
  gemm(false, true, N, OC, IC, inp, IC, w, IC, 0.f, pre, OC, [&](int r0, int rows, int c0, int cols) {
    if (bias) add_bias(pre + int64_t(r0) * OC + c0, bias + c0, rows, cols, OC);
    for (int r = r0; r < r0 + rows; ++r) {
      const int64_t off = int64_t(r) * OC + c0;
      gelu_rows(out + off, pre + off, size_t(cols));
    }
  });
}

void matmul_backward_gelu(float* dpre, float* dw, float* dbias, const float* dout, const float* gelu_out,
                          const float* pre, const float* w, int N, int IC, int OC) {
  // dpre[N,IC] = (dout[N,OC] · W[OC,IC]) ∘ gelu'(pre), per chunk while it is in cache
  gemm(false, false, N, IC, OC, dout, OC, w, IC, 0.f, dpre, IC, [&](int r0, int rows, int c0, int cols) {
    for (int r = r0; r < r0 + rows; ++r) {
      const int64_t off = int64_t(r) * IC + c0;
      gelu_grad_rows(dpre + off, pre + off, size_t(cols));
    }
  });
  matmul_backward(nullptr, dw, dbias, dout, gelu_out, w, N, IC, OC);
}

void lm_head_forward(float* logits, const float* inp, const float* w, int N, int C, int V, int Vp) {
  // logits[N, :V] = inp[N,C] · W[V,C]ᵀ (rows Vp apart); the padded columns become 0
  gemm(false, true, N, V, C, inp, C, w, C, 0.f, logits, Vp);
#pragma omp parallel for schedule(static)
  for (int r = 0; r < N; ++r) std::fill(logits + int64_t(r) * Vp + V, logits + int64_t(r + 1) * Vp, 0.f);
}

void lm_head_backward(float* dinp, float* dw, const float* dlogits, const float* inp, const float* w, int N, int C,
                      int V, int Vp) {
  if (dinp) gemm(false, false, N, C, V, dlogits, Vp, w, C, 1.f, dinp, C);   // dinp += dlogits[:, :V] · W
  if (dw) gemm(true, false, V, C, N, dlogits, Vp, inp, C, 1.f, dw, C);      // dW += dlogits[:, :V]ᵀ · inp
}

}  // namespace zt::cpu
