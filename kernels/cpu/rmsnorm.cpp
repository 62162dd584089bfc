// CPU RMSNorm (Llama's: no mean, no bias, eps given) forward, forward fused with the residual add
// before it, and accumulating backward: SIMD row bodies (simd.h); dw reduces over rows per channel
// chunk, so no sum depends on the thread count.
#include <algorithm>
#include <cmath>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/simd.h"

namespace zt::cpu {

namespace {

constexpr int kRmsRowBlock = 16;  // rows per task

// Normalises row x (its sum of squares known) into o: out = w ∘ (x · r), r = 1/sqrt(mean(x²) + eps),
// the order of transformers' LlamaRMSNorm.
ZT_SIMD_INLINE void rms_finish_row(float* o, float* rstd, const float* x, float ss, const float* w, int C,
                                   float eps) {
  const float r = 1.0f / std::sqrt(ss / float(C) + eps);
#pragma omp simd
  for (int c = 0; c < C; ++c) o[c] = w[c] * (x[c] * r);
  *rstd = r;
}

ZT_SIMD_INLINE void rms_fwd_body(float* out, float* rstd, const float* inp, const float* w, int n0, int n1, int C,
                                 float eps) {
  for (int n = n0; n < n1; ++n) {
    const float* x = inp + int64_t(n) * C;
    float ss = 0.f;
#pragma omp simd reduction(+ : ss)
    for (int c = 0; c < C; ++c) ss += x[c] * x[c];
    rms_finish_row(out + int64_t(n) * C, rstd + n, x, ss, w, C, eps);
  }
}

ZT_SIMD_INLINE void resid_rms_fwd_body(float* resid, float* out, float* rstd, const float* a, const float* b,
                                       const float* w, int n0, int n1, int C, float eps) {
  for (int n = n0; n < n1; ++n) {
    const int64_t off = int64_t(n) * C;
    float* r = resid + off;
    float ss = 0.f;
#pragma omp simd reduction(+ : ss)
    for (int c = 0; c < C; ++c) {
      const float v = a[off + c] + b[off + c];
      r[c] = v;
      ss += v * v;
    }
    rms_finish_row(out + off, rstd + n, r, ss, w, C, eps);
  }
}

// dinp += r · (w∘g − x̂ · mean(w∘g∘x̂)), x̂ = x · r.
ZT_SIMD_INLINE void rms_bwd_rows_body(float* dinp, const float* dout, const float* inp, const float* w,
                                      const float* rstd, int n0, int n1, int C) {
  for (int n = n0; n < n1; ++n) {
    const float* x = inp + int64_t(n) * C;
    const float* g = dout + int64_t(n) * C;
    const float r = rstd[n];
    float dot = 0.f;
#pragma omp simd reduction(+ : dot)
    for (int c = 0; c < C; ++c) dot += (w[c] * g[c]) * (x[c] * r);
    dot /= float(C);
    float* di = dinp + int64_t(n) * C;
#pragma omp simd
    for (int c = 0; c < C; ++c) di[c] += r * (w[c] * g[c] - (x[c] * r) * dot);
  }
}

// dw over all rows for channels [c0, c1), rows in order.
ZT_SIMD_INLINE void rms_bwd_params_body(float* dw, const float* dout, const float* inp, const float* rstd, int N,
                                        int C, int c0, int c1) {
  for (int n = 0; n < N; ++n) {
    const float* x = inp + int64_t(n) * C;
    const float* g = dout + int64_t(n) * C;
    const float r = rstd[n];
#pragma omp simd
    for (int c = c0; c < c1; ++c) dw[c] += g[c] * (x[c] * r);
  }
}

ZT_SIMD_DISPATCH(rms_fwd, (float* out, float* rstd, const float* inp, const float* w, int n0, int n1, int C, float eps),
                 (out, rstd, inp, w, n0, n1, C, eps))
ZT_SIMD_DISPATCH(resid_rms_fwd,
                 (float* resid, float* out, float* rstd, const float* a, const float* b, const float* w, int n0,
                  int n1, int C, float eps),
                 (resid, out, rstd, a, b, w, n0, n1, C, eps))
ZT_SIMD_DISPATCH(rms_bwd_rows,
                 (float* dinp, const float* dout, const float* inp, const float* w, const float* rstd, int n0, int n1,
                  int C),
                 (dinp, dout, inp, w, rstd, n0, n1, C))
ZT_SIMD_DISPATCH(rms_bwd_params,
                 (float* dw, const float* dout, const float* inp, const float* rstd, int N, int C, int c0, int c1),
                 (dw, dout, inp, rstd, N, C, c0, c1))

}  // namespace

void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* w, int N, int C, float eps) {
  const int blocks = (N + kRmsRowBlock - 1) / kRmsRowBlock;
#pragma omp parallel for schedule(static)
  for (int k = 0; k < blocks; ++k) rms_fwd(out, rstd, inp, w, k * kRmsRowBlock, std::min(N, (k + 1) * kRmsRowBlock), C, eps);
}

void residual_rmsnorm_forward(float* resid, float* out, float* rstd, const float* a, const float* b, const float* w,
                              int N, int C, float eps) {
  const int blocks = (N + kRmsRowBlock - 1) / kRmsRowBlock;
#pragma omp parallel for schedule(static)
  for (int k = 0; k < blocks; ++k)
    resid_rms_fwd(resid, out, rstd, a, b, w, k * kRmsRowBlock, std::min(N, (k + 1) * kRmsRowBlock), C, eps);
}

void rmsnorm_backward(float* dinp, float* dw, const float* dout, const float* inp, const float* w, const float* rstd,
                      int N, int C) {
  if (dinp) {
    const int blocks = (N + kRmsRowBlock - 1) / kRmsRowBlock;
#pragma omp parallel for schedule(static)
    for (int k = 0; k < blocks; ++k)
      rms_bwd_rows(dinp, dout, inp, w, rstd, k * kRmsRowBlock, std::min(N, (k + 1) * kRmsRowBlock), C);
  }
  if (dw) {
    const int chunks = (C + kChannelChunk - 1) / kChannelChunk;
#pragma omp parallel for schedule(static)
    for (int ch = 0; ch < chunks; ++ch)
      rms_bwd_params(dw, dout, inp, rstd, N, C, ch * kChannelChunk, std::min(C, (ch + 1) * kChannelChunk));
  }
}

}  // namespace zt::cpu
