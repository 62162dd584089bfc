// CPU linear layer: out = inp · Wᵀ + bias through OpenBLAS sgemm; backward accumulates dinp, dW
// (sgemm with beta = 1) and dbias (column sums per channel chunk, rows in order).
#include <cblas.h>

#include <algorithm>

#include "kernels/cpu/cpu_ops.h"

namespace zt::cpu {

namespace {

// OpenBLAS's own threading does NOT give the same bits for every thread count (measured with
// OpenBLAS 0.3.21: e.g. a 96×29×160 sgemm differs between 1 and 2 threads). So OpenBLAS runs
// single-threaded (see cpu_backend.cpp) and we split C's rows into chunks of a fixed size, one
// single-threaded sgemm per chunk, chunks spread over OpenMP threads: every element is computed
// by the same call whatever the thread count.
constexpr int kGemmRowChunk = 64;

// C[M,N] = alpha·op(A)[M,K]·op(B)[K,N] + beta·C, row-major.
void gemm(bool trans_a, bool trans_b, int M, int N, int K, const float* A, int lda, const float* B, int ldb,
          float beta, float* C, int ldc) {
  const int chunks = (M + kGemmRowChunk - 1) / kGemmRowChunk;
#pragma omp parallel for schedule(dynamic, 1)
  for (int ch = 0; ch < chunks; ++ch) {
    const int r0 = ch * kGemmRowChunk, rows = std::min(kGemmRowChunk, M - r0);
    const float* a = trans_a ? A + r0 : A + int64_t(r0) * lda;
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, rows, N,
                K, 1.f, a, lda, B, ldb, beta, C + int64_t(r0) * ldc, ldc);
  }
}

}  // namespace

void matmul_forward(float* out, const float* inp, const float* w, const float* bias, int N, int IC, int OC) {
  float beta = 0.f;
  if (bias) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; ++n) std::copy(bias, bias + OC, out + int64_t(n) * OC);
    beta = 1.f;
  }
  // out[N,OC] = inp[N,IC] · W[OC,IC]ᵀ (+ out)
  gemm(false, true, N, OC, IC, inp, IC, w, IC, beta, out, OC);
}

void matmul_backward(float* dinp, float* dw, float* dbias, const float* dout, const float* inp, const float* w,
                     int N, int IC, int OC) {
  // dinp[N,IC] += dout[N,OC] · W[OC,IC]
  if (dinp) gemm(false, false, N, IC, OC, dout, OC, w, IC, 1.f, dinp, IC);
  // dW[OC,IC] += dout[N,OC]ᵀ · inp[N,IC]
  if (dw) gemm(true, false, OC, IC, N, dout, OC, inp, IC, 1.f, dw, IC);
  if (dbias) {
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
}

}  // namespace zt::cpu
