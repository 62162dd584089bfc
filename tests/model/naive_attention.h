// The straightforward causal attention (fp32, full T×T probabilities kept): the test reference the
// tiled CPU attention (kernels/cpu/attention.h) and the GPU kernels are checked against.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace zt::test {

// qkv [B,T,3C] -> out [B,T,C]; att receives the probabilities [B,NH,T,T] (zero above the diagonal).
inline void naive_attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH) {
  const int hs = C / NH;
  const float scale = 1.0f / std::sqrt(float(hs));
  const int64_t C3 = 3 * int64_t(C);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T; ++t) {
        const float* q = qkv + (int64_t(b) * T + t) * C3 + h * hs;
        float* a = att + ((int64_t(b) * NH + h) * T + t) * T;
        float maxv = -INFINITY;
        for (int t2 = 0; t2 <= t; ++t2) {
          const float* k = qkv + (int64_t(b) * T + t2) * C3 + C + h * hs;
          float s = 0.f;
          for (int i = 0; i < hs; ++i) s += q[i] * k[i];
          s *= scale;
          a[t2] = s;
          maxv = s > maxv ? s : maxv;
        }
        float sum = 0.f;
        for (int t2 = 0; t2 <= t; ++t2) {
          a[t2] = std::exp(a[t2] - maxv);
          sum += a[t2];
        }
        const float inv = 1.0f / sum;
        for (int t2 = 0; t2 <= t; ++t2) a[t2] *= inv;
        for (int t2 = t + 1; t2 < T; ++t2) a[t2] = 0.f;
        float* o = out + (int64_t(b) * T + t) * C + h * hs;
        for (int i = 0; i < hs; ++i) o[i] = 0.f;
        for (int t2 = 0; t2 <= t; ++t2) {
          const float* v = qkv + (int64_t(b) * T + t2) * C3 + 2 * C + h * hs;
          const float p = a[t2];
          for (int i = 0; i < hs; ++i) o[i] += p * v[i];
        }
      }
}

// dqkv += d(Σ out·dout)/d(qkv), from the probabilities the forward saved.
inline void naive_attention_backward(float* dqkv, const float* dout, const float* qkv, const float* att, int B,
                                     int T, int C, int NH) {
  const int hs = C / NH;
  const float scale = 1.0f / std::sqrt(float(hs));
  const int64_t C3 = 3 * int64_t(C);
  std::vector<float> datt(T > 0 ? size_t(T) : 1);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T; ++t) {
        const float* a = att + ((int64_t(b) * NH + h) * T + t) * T;
        const float* g = dout + (int64_t(b) * T + t) * C + h * hs;
        const float* q = qkv + (int64_t(b) * T + t) * C3 + h * hs;
        float* dq = dqkv + (int64_t(b) * T + t) * C3 + h * hs;
        float dot = 0.f;  // through out = Σ a·v: datt = g·v, dv += a·g
        for (int t2 = 0; t2 <= t; ++t2) {
          const float* v = qkv + (int64_t(b) * T + t2) * C3 + 2 * C + h * hs;
          float* dv = dqkv + (int64_t(b) * T + t2) * C3 + 2 * C + h * hs;
          float s = 0.f;
          for (int i = 0; i < hs; ++i) {
            s += g[i] * v[i];
            dv[i] += a[t2] * g[i];
          }
          datt[size_t(t2)] = s;
          dot += a[t2] * s;
        }
        for (int t2 = 0; t2 <= t; ++t2) {  // through the softmax, then the scaled q·k scores
          const float dpre = a[t2] * (datt[size_t(t2)] - dot) * scale;
          const float* k = qkv + (int64_t(b) * T + t2) * C3 + C + h * hs;
          float* dk = dqkv + (int64_t(b) * T + t2) * C3 + C + h * hs;
          for (int i = 0; i < hs; ++i) {
            dq[i] += dpre * k[i];
            dk[i] += dpre * q[i];
          }
        }
      }
}

}  // namespace zt::test
