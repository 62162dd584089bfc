// Host-side fp32 <-> bf16/fp16 conversions (round to nearest even, NaN kept) and the rounding the
// CPU backend uses to emulate bf16/fp16 training: fp32 storage holding only representable values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "base/dtype.h"

namespace zt {

inline uint16_t f32_to_bf16_bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) return uint16_t((u >> 16) | 0x0040u);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

inline float bf16_bits_to_f32(uint16_t b) {
  uint32_t u = uint32_t(b) << 16;
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

inline float round_to_bf16(float x) { return bf16_bits_to_f32(f32_to_bf16_bits(x)); }
// fp16: finite values beyond 65504 round to inf, as a real fp16 store overflows.
inline float round_to_fp16(float x) { return float(static_cast<_Float16>(x)); }

// Rounds n fp32 values in place to what `p` can hold (no-op for FP32).
inline void round_to_precision(float* x, size_t n, DType p) {
  if (p == DType::BF16)
    for (size_t i = 0; i < n; ++i) x[i] = round_to_bf16(x[i]);
  else if (p == DType::F16)
    for (size_t i = 0; i < n; ++i) x[i] = round_to_fp16(x[i]);
}

}  // namespace zt
