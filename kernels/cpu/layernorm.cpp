// CPU LayerNorm (eps 1e-5) forward, forward fused with the residual add before it, and backward:
// SIMD row bodies (simd.h); dw/db reduce over rows per channel chunk, so no sum depends on threads.
#include <algorithm>
#include <cmath>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/simd.h"

namespace zt::cpu {

namespace {

constexpr int kRowBlock = 16;  // rows per task

// Normalises one row x (mean already known) into o.
ZT_SIMD_INLINE void ln_finish_row(float* o, float* mean, float* rstd, const float* x, float m, const float* w,
                                  const float* b, int C) {
  float var = 0.f;
#pragma omp simd reduction(+ : var)
  for (int c = 0; c < C; ++c) {
    const float d = x[c] - m;
    var += d * d;
  }
  var /= float(C);
  const float s = 1.0f / std::sqrt(var + 1e-5f);
#pragma omp simd
  for (int c = 0; c < C; ++c) o[c] = (x[c] - m) * s * w[c] + b[c];
  *mean = m;
  *rstd = s;
}

ZT_SIMD_INLINE void ln_fwd_body(float* out, float* mean, float* rstd, const float* inp, const float* w,
                                const float* b, int n0, int n1, int C) {
  for (int n = n0; n < n1; ++n) {
    const float* x = inp + int64_t(n) * C;
    float m = 0.f;
#pragma omp simd reduction(+ : m)
    for (int c = 0; c < C; ++c) m += x[c];
    ln_finish_row(out + int64_t(n) * C, mean + n, rstd + n, x, m / float(C), w, b, C);
  }
}

ZT_SIMD_INLINE void resid_ln_fwd_body(float* resid, float* out, float* mean, float* rstd, const float* a,
                                      const float* bb, const float* w, const float* b, int n0, int n1, int C) {
  for (int n = n0; n < n1; ++n) {
    const int64_t off = int64_t(n) * C;
    float* r = resid + off;
    float m = 0.f;
#pragma omp simd reduction(+ : m)
    for (int c = 0; c < C; ++c) {
      const float v = a[off + c] + bb[off + c];
      r[c] = v;
      m += v;
    }
    ln_finish_row(out + off, mean + n, rstd + n, r, m / float(C), w, b, C);
  }
}

ZT_SIMD_INLINE void ln_bwd_rows_body(float* dinp, const float* dout, const float* inp, const float* w,
                                     const float* mean, const float* rstd, int n0, int n1, int C) {
  for (int n = n0; n < n1; ++n) {
    const float* x = inp + int64_t(n) * C;
    const float* g = dout + int64_t(n) * C;
    const float m = mean[n], s = rstd[n];
    float dnorm_mean = 0.f, dnorm_norm_mean = 0.f;
#pragma omp simd reduction(+ : dnorm_mean, dnorm_norm_mean)
    for (int c = 0; c < C; ++c) {
      const float xhat = (x[c] - m) * s;
      const float dnorm = w[c] * g[c];
      dnorm_mean += dnorm;
      dnorm_norm_mean += dnorm * xhat;
    }
    dnorm_mean /= float(C);
    dnorm_norm_mean /= float(C);
    float* di = dinp + int64_t(n) * C;
#pragma omp simd
    for (int c = 0; c < C; ++c) {
      const float xhat = (x[c] - m) * s;
      const float dnorm = w[c] * g[c];
      di[c] += (dnorm - dnorm_mean - xhat * dnorm_norm_mean) * s;
    }
  }
}

// dw, db over all rows for channels [c0, c1), rows in order.
ZT_SIMD_INLINE void ln_bwd_params_body(float* dw, float* db, const float* dout, const float* inp,
                                       const float* mean, const float* rstd, int N, int C, int c0, int c1) {
  for (int n = 0; n < N; ++n) {
    const float* x = inp + int64_t(n) * C;
    const float* g = dout + int64_t(n) * C;
    const float m = mean[n], s = rstd[n];
#pragma omp simd
    for (int c = c0; c < c1; ++c) {
      dw[c] += (x[c] - m) * s * g[c];
      db[c] += g[c];
    }
  }
}

ZT_SIMD_DISPATCH(ln_fwd,
                 (float* out, float* mean, float* rstd, const float* inp, const float* w, const float* b, int n0,
                  int n1, int C),
                 (out, mean, rstd, inp, w, b, n0, n1, C))
ZT_SIMD_DISPATCH(resid_ln_fwd,
                 (float* resid, float* out, float* mean, float* rstd, const float* a, const float* bb, const float* w,
                  const float* b, int n0, int n1, int C),
                 (resid, out, mean, rstd, a, bb, w, b, n0, n1, C))
ZT_SIMD_DISPATCH(ln_bwd_rows,
                 (float* dinp, const float* dout, const float* inp, const float* w, const float* mean,
                  const float* rstd, int n0, int n1, int C),
                 (dinp, dout, inp, w, mean, rstd, n0, n1, C))
ZT_SIMD_DISPATCH(ln_bwd_params,
                 (float* dw, float* db, const float* dout, const float* inp, const float* mean, const float* rstd,
                  int N, int C, int c0, int c1),
                 (dw, db, dout, inp, mean, rstd, N, C, c0, c1))

}  // namespace

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w, const float* b,
                       int N, int C) {
  const int blocks = (N + kRowBlock - 1) / kRowBlock;
#pragma omp parallel for schedule(static)
  for (int k = 0; k < blocks; ++k)
    ln_fwd(out, mean, rstd, inp, w, b, k * kRowBlock, std::min(N, (k + 1) * kRowBlock), C);
}

void residual_layernorm_forward(float* resid, float* out, float* mean, float* rstd, const float* a,
                                const float* bb, const float* w, const float* b, int N, int C) {
  const int blocks = (N + kRowBlock - 1) / kRowBlock;
#pragma omp parallel for schedule(static)
  for (int k = 0; k < blocks; ++k)
    resid_ln_fwd(resid, out, mean, rstd, a, bb, w, b, k * kRowBlock, std::min(N, (k + 1) * kRowBlock), C);
}

void layernorm_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp, const float* w,
                        const float* mean, const float* rstd, int N, int C) {
  const int blocks = (N + kRowBlock - 1) / kRowBlock;
#pragma omp parallel for schedule(static)
  for (int k = 0; k < blocks; ++k)
    ln_bwd_rows(dinp, dout, inp, w, mean, rstd, k * kRowBlock, std::min(N, (k + 1) * kRowBlock), C);
  const int chunks = (C + kChannelChunk - 1) / kChannelChunk;
#pragma omp parallel for schedule(static)
  for (int ch = 0; ch < chunks; ++ch)
    ln_bwd_params(dw, db, dout, inp, mean, rstd, N, C, ch * kChannelChunk, std::min(C, (ch + 1) * kChannelChunk));
}

}  // namespace zt::cpu
