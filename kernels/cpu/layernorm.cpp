// CPU LayerNorm (eps 1e-5) forward and backward; dw/db reduce over rows per channel chunk so the
// summation order never depends on the thread count.
#include <algorithm>
#include <cmath>

#include "kernels/cpu/cpu_ops.h"

namespace zt::cpu {

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w, const float* b,
                       int N, int C) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const float* x = inp + int64_t(n) * C;
    float m = 0.f;
    for (int c = 0; c < C; ++c) m += x[c];
    m /= float(C);
    float var = 0.f;
    for (int c = 0; c < C; ++c) {
      const float d = x[c] - m;
      var += d * d;
    }
    var /= float(C);
    const float s = 1.0f / std::sqrt(var + 1e-5f);
    float* o = out + int64_t(n) * C;
    for (int c = 0; c < C; ++c) o[c] = (x[c] - m) * s * w[c] + b[c];
    mean[n] = m;
    rstd[n] = s;
  }
}

void layernorm_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp, const float* w,
                        const float* mean, const float* rstd, int N, int C) {
  // dinp: rows are independent.
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const float* x = inp + int64_t(n) * C;
    const float* g = dout + int64_t(n) * C;
    const float m = mean[n], s = rstd[n];
    float dnorm_mean = 0.f, dnorm_norm_mean = 0.f;
    for (int c = 0; c < C; ++c) {
      const float xhat = (x[c] - m) * s;
      const float dnorm = w[c] * g[c];
      dnorm_mean += dnorm;
      dnorm_norm_mean += dnorm * xhat;
    }
    dnorm_mean /= float(C);
    dnorm_norm_mean /= float(C);
    float* di = dinp + int64_t(n) * C;
    for (int c = 0; c < C; ++c) {
      const float xhat = (x[c] - m) * s;
      const float dnorm = w[c] * g[c];
      di[c] += (dnorm - dnorm_mean - xhat * dnorm_norm_mean) * s;
    }
  }
  // dw, db: Σ over rows, one channel chunk per task, rows in order.
  const int chunks = (C + kChannelChunk - 1) / kChannelChunk;
#pragma omp parallel for schedule(static)
  for (int ch = 0; ch < chunks; ++ch) {
    const int c0 = ch * kChannelChunk, c1 = std::min(C, c0 + kChannelChunk);
    for (int n = 0; n < N; ++n) {
      const float* x = inp + int64_t(n) * C;
      const float* g = dout + int64_t(n) * C;
      const float m = mean[n], s = rstd[n];
      for (int c = c0; c < c1; ++c) {
        dw[c] += (x[c] - m) * s * g[c];
        db[c] += g[c];
      }
    }
  }
}

}  // namespace zt::cpu
