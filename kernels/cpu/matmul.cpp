// CPU linear layer: out = inp · Wᵀ + bias through OpenBLAS sgemm; backward accumulates dinp, dW
// (sgemm with beta = 1) and dbias (column sums per channel chunk, rows in order).
#include <cblas.h>

#include <algorithm>

#include "kernels/cpu/cpu_ops.h"

namespace zt::cpu {

void matmul_forward(float* out, const float* inp, const float* w, const float* bias, int N, int IC, int OC) {
  float beta = 0.f;
  if (bias) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; ++n) std::copy(bias, bias + OC, out + int64_t(n) * OC);
    beta = 1.f;
  }
  // out[N,OC] = inp[N,IC] · W[OC,IC]ᵀ (+ out)
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, IC, 1.f, inp, IC, w, IC, beta, out, OC);
}

void matmul_backward(float* dinp, float* dw, float* dbias, const float* dout, const float* inp, const float* w,
                     int N, int IC, int OC) {
  // dinp[N,IC] += dout[N,OC] · W[OC,IC]
  if (dinp) cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, IC, OC, 1.f, dout, OC, w, IC, 1.f, dinp, IC);
  // dW[OC,IC] += dout[N,OC]ᵀ · inp[N,IC]
  if (dw) cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, IC, N, 1.f, dout, OC, inp, IC, 1.f, dw, IC);
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
