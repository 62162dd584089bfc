// base/half_float.h: the one fp32 <-> bf16/fp16 rule — known bit patterns, every finite half's
// round trip, agreement with the compiler's _Float16 conversion over a sweep of fp32 bit patterns,
// and bf16 against rounding computed in double.
#include "base/half_float.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace zt {
namespace {

TEST(HalfFloat, KnownBitPatterns) {
  EXPECT_EQ(f32_to_f16_bits(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16_bits(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_f16_bits(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16_bits(65520.0f), 0x7c00);               // the tie above the largest half rounds to inf
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.0f, -25)), 0x0000);  // tie to even: zero
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.5f, -24)), 0x0002);  // tie to even: 2
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(f32_to_f16_bits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie, even stays
  EXPECT_EQ(f32_to_f16_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie, odd rounds up
  EXPECT_EQ(f32_to_f16_bits(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_TRUE(std::isnan(f16_bits_to_f32(f32_to_f16_bits(std::nanf("")))));
  EXPECT_EQ(f16_bits_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_bits_to_f32(0x7bff), 65504.0f);
  EXPECT_EQ(f16_bits_to_f32(0xc000), -2.0f);
  EXPECT_EQ(f32_to_bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16_bits(1.0f + std::ldexp(1.0f, -8)), 0x3f80);      // tie, even stays
  EXPECT_EQ(f32_to_bf16_bits(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(bf16_bits_to_f32(0xbf80), -1.0f);
  EXPECT_TRUE(std::isnan(bf16_bits_to_f32(f32_to_bf16_bits(std::nanf("")))));
  // Every finite half survives the round trip.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00) continue;
    ASSERT_EQ(f32_to_f16_bits(f16_bits_to_f32(uint16_t(h))), h) << std::hex << h;
  }
}

TEST(HalfFloat, Fp16EqualsTheCompilersConversion) {
  // Every 251st fp32 bit pattern (about 17 million, all exponents and signs) and the edges.
  for (uint64_t b = 0; b <= 0xffffffffull; b += 251) {
    const float x = f32_from_bits(uint32_t(b));
    const uint16_t got = f32_to_f16_bits(x);
    if (std::isnan(x)) {
      ASSERT_EQ(got & 0x7e00u, 0x7e00u) << std::hex << b;          // a quiet NaN
      ASSERT_EQ(got & 0x8000u, (uint32_t(b) >> 16) & 0x8000u) << std::hex << b;  // its sign
      continue;
    }
    const _Float16 h = static_cast<_Float16>(x);
    uint16_t want;
    std::memcpy(&want, &h, 2);
    ASSERT_EQ(got, want) << std::hex << "input bits 0x" << b;
    ASSERT_EQ(f16_bits_to_f32(got), float(h)) << std::hex << b;
  }
}

TEST(HalfFloat, Bf16IsNearestEvenComputedInDouble) {
  for (uint64_t b = 0; b <= 0xffffffffull; b += 257) {
    const float x = f32_from_bits(uint32_t(b));
    const uint16_t got = f32_to_bf16_bits(x);
    if (std::isnan(x)) {
      ASSERT_TRUE(std::isnan(bf16_bits_to_f32(got))) << std::hex << b;
      continue;
    }
    // The two bf16 neighbours of x (truncation and one up), the nearer in double, ties to even.
    // Infinity stands for 2^128 (IEEE's overflow rule: past the largest finite value plus half an ulp).
    const uint16_t lo = uint16_t(uint32_t(b) >> 16), hi = uint16_t(lo + 1);
    if ((lo & 0x7fffu) == 0x7f80u) {  // x is infinite: exact
      ASSERT_EQ(got, lo);
      continue;
    }
    auto value = [](uint16_t h) {
      const double m = (h & 0x7fffu) == 0x7f80u ? std::ldexp(1.0, 128) : std::fabs(double(bf16_bits_to_f32(h)));
      return (h & 0x8000u) ? -m : m;
    };
    const double dlo = std::fabs(double(x) - value(lo)), dhi = std::fabs(double(x) - value(hi));
    const uint16_t want = dlo < dhi ? lo : dhi < dlo ? hi : ((lo & 1u) ? hi : lo);
    ASSERT_EQ(got, want) << std::hex << "input bits 0x" << b;
  }
}

}  // namespace
}  // namespace zt
