// Branch-free float exp and the GPT-2 GELU (tanh form, written through exp) that vectorise inside
// `#pragma omp simd` loops; for the SIMD kernel bodies of kernels/cpu (see simd.h).
#pragma once

#include <bit>
#include <cstdint>

#include "kernels/cpu/simd.h"

namespace zt::cpu::vm {

// e^x within 2 ulp for x in [-87, 88] (Cody-Waite range reduction by ln 2, degree-6 polynomial on
// [-ln2/2, ln2/2]); 0 below -87, e^88 above 88, NaN stays NaN.
ZT_SIMD_INLINE float exp(float x) {
  constexpr float kLo = -87.0f, kHi = 88.0f, kRound = 12582912.0f;  // 1.5 · 2^23: round to integer
  const float xc = x < kLo ? kLo : (x > kHi ? kHi : x);
  const float t = xc * 1.44269504088896341f + kRound;
  const float n = t - kRound;                                   // nearest integer to x / ln 2
  const int32_t k = std::bit_cast<int32_t>(t) - std::bit_cast<int32_t>(kRound);  // the same integer, as int
  float r = xc - n * 0.693359375f;                              // ln 2 = 0.693359375 - 2.12194440e-4
  r = r + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  const float e = p * std::bit_cast<float>((k + 127) << 23);
  return x < kLo ? 0.0f : e;
}

inline constexpr float kGeluK = 0.7978845608028654f;  // sqrt(2/pi)
inline constexpr float kGeluC = 0.044715f;

// 0.5·x·(1 + tanh(u)), u = k(x + c·x³), computed as x·s with s = 1/(1 + e^(-2u)) (the same function).
ZT_SIMD_INLINE float gelu_sigmoid(float x) {
  const float u = kGeluK * (x + kGeluC * x * x * x);
  return 1.0f / (1.0f + vm::exp(-2.0f * u));
}
ZT_SIMD_INLINE float gelu(float x) { return x * gelu_sigmoid(x); }
// d gelu / dx = s + 2·x·s·(1 - s)·k·(1 + 3c·x²)   (0.5(1 + tanh u) = s, sech² u = 4s(1 - s)).
ZT_SIMD_INLINE float gelu_grad(float x) {
  const float s = gelu_sigmoid(x);
  return s + 2.0f * x * s * (1.0f - s) * (kGeluK * (1.0f + 3.0f * kGeluC * x * x));
}

// A softmax's two passes over a row of n values: the largest (from `init`), then e[i] = e^(x[i] - mx)
// with their sum (e may be x). Each inlines into the caller's SIMD body.
ZT_SIMD_INLINE float max_of(const float* x, int n, float init) {
  float mx = init;
#pragma omp simd reduction(max : mx)
  for (int i = 0; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  return mx;
}
ZT_SIMD_INLINE float exp_shifted_sum(const float* x, int n, float mx, float* e) {
  float sum = 0.f;
#pragma omp simd reduction(+ : sum)
  for (int i = 0; i < n; ++i) {
    const float v = vm::exp(x[i] - mx);
    e[i] = v;
    sum += v;
  }
  return sum;
}

}  // namespace zt::cpu::vm
