// The one rule between fp32 and the 16-bit float formats (bf16 and IEEE fp16): round to nearest
// even, subnormals kept, overflow to infinity, NaN to a quiet NaN with its sign and top payload bits
// (what x86's vcvtps2ph and CUDA's conversions give). Host and device. Every hand-written
// conversion in the project is one of these: the communicators' 16-bit reductions, the CPU
// backend's precision emulation, the CPU Adam's fused copy, the quantizers, checkpoint import and
// export.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define ZT_HALF_HD __host__ __device__ __forceinline__
#else
#define ZT_HALF_HD inline __attribute__((always_inline))
#endif

// Always inlined: a file compiled for a wider instruction set (offload's -mavx512f file, for one)
// emits no out-of-line copy that the linker could hand to the other files.
namespace zt {

ZT_HALF_HD uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
ZT_HALF_HD float f32_from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

ZT_HALF_HD float bf16_bits_to_f32(uint16_t h) { return f32_from_bits(uint32_t(h) << 16); }

ZT_HALF_HD uint16_t f32_to_bf16_bits(float f) {
  const uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x0040u);  // quiet NaN
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);                    // nearest even
}

ZT_HALF_HD float f16_bits_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return f32_from_bits(sign | 0x7f800000u | (man << 13));  // inf / NaN
  if (exp == 0) {  // zero or subnormal: man * 2^-24, exact in fp32
    const float v = float(man) * f32_from_bits(0x33800000u);
    return sign ? -v : v;
  }
  return f32_from_bits(sign | ((exp + 112u) << 23) | (man << 13));
}

// `mant >> shift` rounded to nearest even (shift >= 1).
ZT_HALF_HD uint32_t shift_round_even(uint32_t mant, uint32_t shift) {
  const uint32_t r = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1u);
  return (rem > half || (rem == half && (r & 1u))) ? r + 1u : r;
}

ZT_HALF_HD uint16_t f32_to_f16_bits(float f) {
  const uint32_t x = f32_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return uint16_t(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));  // quiet NaN
  if (ax >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to >= 65520 (and inf): inf
  if (ax >= 0x38800000u) return uint16_t(sign | shift_round_even(ax - 0x38000000u, 13));  // normal
  if (ax <= 0x33000000u) return uint16_t(sign);  // <= 2^-25: zero (the tie goes to even)
  const uint32_t e = ax >> 23;                   // subnormal: units of 2^-24
  return uint16_t(sign | shift_round_even((ax & 0x7fffffu) | 0x800000u, 126u - e));
}

}  // namespace zt
