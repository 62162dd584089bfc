// The element rules of the block quantizers, shared by the CPU variants and the CUDA kernels so
// both compute the same bits: the block scale from its absmax, q = round-half-to-even(x / scale)
// decided exactly, and the nibble packing of int4. Host and device (ZT_QUANT_HD).
#pragma once

#include <cstdint>
#include <cstring>

#include "base/half_float.h"

#if defined(__CUDACC__)
#define ZT_QUANT_HD __host__ __device__ __forceinline__
#else
#define ZT_QUANT_HD inline __attribute__((always_inline))
#endif

namespace zt::quant {

// |x| as fp32 bits: for finite values the integer order of these bits is the order of |x|, so the
// block absmax is an integer max (exact, any grouping) and x is non-finite iff bits >= kInfBits.
inline constexpr uint32_t kInfBits = 0x7f800000u;
ZT_QUANT_HD uint32_t abs_bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u & 0x7fffffffu;
}
ZT_QUANT_HD float float_of_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// The scale of a block of largest magnitude `absmax` (finite, >= 0) for levels +-qmax:
//   scale = fl32(absmax / qmax)                        when that is a normal float;
//   the smallest float >= absmax / qmax                when it is subnormal or 0 (absmax > 0),
//     so that |x / scale| <= qmax still holds and no element is clamped;
//   one float lower when qmax * scale would overflow to infinity (absmax near FLT_MAX);
//   0 for absmax == 0.
// In the normal range fl32(absmax / qmax) is within 2^-24 of the exact quotient, which keeps
// |x / scale| <= qmax (1 + 2^-24): rounding brings it to qmax, never past it.
ZT_QUANT_HD float block_scale(uint32_t absmax_bits, int qmax) {
  if (absmax_bits == 0) return 0.0f;
  const float absmax = float_of_bits(absmax_bits);
  const double exact = double(absmax) / double(qmax);
  float s = float(exact);
  if (abs_bits(s) < 0x00800000u && double(s) < exact) s = float_of_bits(abs_bits(s) + 1u);
  if (abs_bits(float(qmax) * s) >= kInfBits) s = float_of_bits(abs_bits(s) - 1u);
  return s;
}

// q = round-half-to-even(x / scale), decided on the exact quotient, clamped to +-qmax; scale > 0.
// fl32(x / scale) is within 2^-17 of the exact quotient (|x / scale| <= 128): its nearest even
// integer r (the 1.5 * 2^23 addition rounds to an integer, |t| < 2^22) is the answer or one off;
// the residual x - r * scale is exact in double (a 24-bit times an 8-bit significand, then one
// subtraction of aligned values), and comparing it with scale / 2 (exact too) fixes r.
ZT_QUANT_HD int quantize_value(float x, float scale, int qmax) {
  const float t = x / scale;
  const float r = (t + 12582912.0f) - 12582912.0f;
  int q = int(r);
  const double res = double(x) - double(r) * double(scale);
  const double half = 0.5 * double(scale);
  const int odd = q & 1;  // branch-free below, so that the loops over a block vectorise
  q += (int(res > half) | (int(res == half) & odd)) - (int(res < -half) | (int(res == -half) & odd));
  q = q > qmax ? qmax : q;
  q = q < -qmax ? -qmax : q;
  return q;
}

// The same q for blocks whose scale is at least 2^-125 (then 1/scale is finite and scale/2 exact),
// without division or double: t = x * (1/scale) is within 2^-16 of the quotient, its nearest even
// integer r is the answer or one off, and the residual x - r * scale is exact in one fp32 fused
// multiply-add (|residual| <= scale/2 plus a little, a multiple of half scale's last bit: 24 bits
// suffice). The comparisons decide as quantize_value() does, so both give the same q.
inline constexpr uint32_t kFastScaleBits = 0x01000000u;  // 2^-125
ZT_QUANT_HD float fused_mul_add(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return __builtin_fmaf(a, b, c);
#endif
}
ZT_QUANT_HD int quantize_value_fast(float x, float inv_scale, float scale, float half, int qmax) {
  const float t = x * inv_scale;
  const float r = (t + 12582912.0f) - 12582912.0f;
  int q = int(r);
  const float res = fused_mul_add(-r, scale, x);
  const int odd = q & 1;
  q += (int(res > half) | (int(res == half) & odd)) - (int(res < -half) | (int(res == -half) & odd));
  q = q > qmax ? qmax : q;
  q = q < -qmax ? -qmax : q;
  return q;
}

// int4 packing: element 2j in the low nibble of byte j, element 2j+1 in its high nibble, each a
// two's-complement value in -7..7; an odd length leaves the last byte's high nibble 0.
ZT_QUANT_HD uint8_t pack_nibbles(int lo, int hi) { return uint8_t((lo & 0xf) | ((hi & 0xf) << 4)); }
ZT_QUANT_HD int low_nibble(uint8_t b) { return int(int8_t(uint8_t(b << 4))) >> 4; }
ZT_QUANT_HD int high_nibble(uint8_t b) { return int(int8_t(b)) >> 4; }

}  // namespace zt::quant
