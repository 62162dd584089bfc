// CPU SwiGLU (Llama's MLP activation): out = silu(gate) ∘ up over rows packed [gate | up], and the
// accumulating backward; SIMD bodies (simd.h) over fixed row blocks, sigmoid through vm::exp, so
// bitwise the same in every SIMD variant.
#include <algorithm>
#include <cstdint>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/vec_math.h"

namespace zt::cpu {

namespace {

constexpr int kSwigluRowBlock = 8;  // rows per task

ZT_SIMD_INLINE float sigmoid(float g) { return 1.0f / (1.0f + vm::exp(-g)); }

ZT_SIMD_INLINE void swiglu_fwd_body(float* out, const float* gu, int n0, int n1, int F) {
  for (int n = n0; n < n1; ++n) {
    const float* g = gu + int64_t(n) * 2 * F;
    const float* u = g + F;
    float* o = out + int64_t(n) * F;
#pragma omp simd
    for (int f = 0; f < F; ++f) o[f] = (g[f] * sigmoid(g[f])) * u[f];
  }
}

// d gate += dout·u·σ(g)(1 + g(1 − σ(g))),  d up += dout·silu(g).
ZT_SIMD_INLINE void swiglu_bwd_body(float* dgu, const float* dout, const float* gu, int n0, int n1, int F) {
  for (int n = n0; n < n1; ++n) {
    const float* g = gu + int64_t(n) * 2 * F;
    const float* u = g + F;
    const float* d = dout + int64_t(n) * F;
    float* dg = dgu + int64_t(n) * 2 * F;
    float* du = dg + F;
#pragma omp simd
    for (int f = 0; f < F; ++f) {
      const float s = sigmoid(g[f]);
      dg[f] += d[f] * u[f] * (s * (1.0f + g[f] * (1.0f - s)));
      du[f] += d[f] * (g[f] * s);
    }
  }
}

ZT_SIMD_DISPATCH(swiglu_fwd, (float* out, const float* gu, int n0, int n1, int F), (out, gu, n0, n1, F))
ZT_SIMD_DISPATCH(swiglu_bwd, (float* dgu, const float* dout, const float* gu, int n0, int n1, int F),
                 (dgu, dout, gu, n0, n1, F))

}  // namespace

void swiglu_forward(float* out, const float* gate_up, int N, int F) {
  const int blocks = (N + kSwigluRowBlock - 1) / kSwigluRowBlock;
#pragma omp parallel for schedule(static)
  for (int k = 0; k < blocks; ++k) swiglu_fwd(out, gate_up, k * kSwigluRowBlock, std::min(N, (k + 1) * kSwigluRowBlock), F);
}

void swiglu_backward(float* dgate_up, const float* dout, const float* gate_up, int N, int F) {
  const int blocks = (N + kSwigluRowBlock - 1) / kSwigluRowBlock;
#pragma omp parallel for schedule(static)
  for (int k = 0; k < blocks; ++k)
    swiglu_bwd(dgate_up, dout, gate_up, k * kSwigluRowBlock, std::min(N, (k + 1) * kSwigluRowBlock), F);
}

}  // namespace zt::cpu
