// The rounding the CPU backend uses to emulate bf16/fp16 training: fp32 storage holding only
// representable values (bf16 by base/half_float.h's rule, fp16 by the compiler's _Float16, the same
// rounding).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "base/dtype.h"
#include "base/half_float.h"

namespace zt {

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
