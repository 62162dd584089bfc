// Tests for the fp32 -> bf16/fp16 conversions behind the fused copy: known roundings (ties to
// even, subnormals, overflow, NaN) and bitwise agreement of every SIMD path on special values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "offload/cpu_adam.h"

namespace zt::offload {
namespace {

float from_bits(uint32_t x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t convert_one(float f, DType dt, SimdLevel path) {
  // Put the value in every lane position of a vector-sized block so the SIMD body handles it.
  std::vector<float> src(37, f);
  std::vector<uint16_t> dst(37, 0);
  convert_f32(dst.data(), dt, src.data(), src.size(), {path, 1});
  for (uint16_t d : dst) EXPECT_EQ(d, dst[0]);
  return dst[0];
}

std::vector<SimdLevel> supported_paths() {
  std::vector<SimdLevel> out{SimdLevel::Scalar};
  if (simd_level_supported(SimdLevel::Avx2)) out.push_back(SimdLevel::Avx2);
  if (simd_level_supported(SimdLevel::Avx512)) out.push_back(SimdLevel::Avx512);
  return out;
}

TEST(Convert, Bf16KnownValues) {
  for (SimdLevel path : supported_paths()) {
    EXPECT_EQ(convert_one(1.0f, DType::BF16, path), 0x3F80);
    EXPECT_EQ(convert_one(from_bits(0x3F808000u), DType::BF16, path), 0x3F80);  // tie -> even
    EXPECT_EQ(convert_one(from_bits(0x3F818000u), DType::BF16, path), 0x3F82);  // tie -> even (up)
    EXPECT_EQ(convert_one(from_bits(0x3F808001u), DType::BF16, path), 0x3F81);  // above tie
    EXPECT_EQ(convert_one(-2.0f, DType::BF16, path), 0xC000);
    EXPECT_EQ(convert_one(std::numeric_limits<float>::infinity(), DType::BF16, path), 0x7F80);
    EXPECT_EQ(convert_one(std::numeric_limits<float>::max(), DType::BF16, path), 0x7F80);  // rounds to inf
    EXPECT_EQ(convert_one(from_bits(0x7F800001u), DType::BF16, path), 0x7FC0);  // sNaN, low payload -> qNaN
    EXPECT_EQ(convert_one(from_bits(0xFFC00000u), DType::BF16, path), 0xFFC0);
  }
}

TEST(Convert, Fp16KnownValues) {
  for (SimdLevel path : supported_paths()) {
    EXPECT_EQ(convert_one(1.0f, DType::F16, path), 0x3C00);
    EXPECT_EQ(convert_one(65504.0f, DType::F16, path), 0x7BFF);
    EXPECT_EQ(convert_one(65519.0f, DType::F16, path), 0x7BFF);
    EXPECT_EQ(convert_one(65520.0f, DType::F16, path), 0x7C00);  // tie at max -> even = inf
    EXPECT_EQ(convert_one(std::ldexp(1.0f, -24), DType::F16, path), 0x0001);  // smallest subnormal
    EXPECT_EQ(convert_one(std::ldexp(1.0f, -25), DType::F16, path), 0x0000);  // tie -> even (0)
    EXPECT_EQ(convert_one(std::ldexp(1.5f, -25), DType::F16, path), 0x0001);
    EXPECT_EQ(convert_one(std::ldexp(3.0f, -25), DType::F16, path), 0x0002);  // 1.5 units: tie -> 2
    EXPECT_EQ(convert_one(std::ldexp(1.0f, -14), DType::F16, path), 0x0400);  // smallest normal
    EXPECT_EQ(convert_one(-0.0f, DType::F16, path), 0x8000);
    EXPECT_EQ(convert_one(from_bits(0x3F801000u), DType::F16, path), 0x3C00);  // 1 + 2^-11: tie -> even
    EXPECT_EQ(convert_one(from_bits(0x3F803000u), DType::F16, path), 0x3C02);  // 1 + 3*2^-11: tie -> even
    EXPECT_EQ(convert_one(-std::numeric_limits<float>::infinity(), DType::F16, path), 0xFC00);
    const uint16_t nan = convert_one(std::nanf(""), DType::F16, path);
    EXPECT_EQ(nan & 0x7C00, 0x7C00);
    EXPECT_NE(nan & 0x03FF, 0);
  }
}

// Every path gives the same bits as the scalar path on random bit patterns (all classes).
TEST(Convert, AllPathsAgreeOnRandomBitPatterns) {
  std::mt19937 rng(1);
  const size_t n = 200003;
  std::vector<float> src(n);
  for (auto& f : src) f = from_bits(rng());
  // Plus dense coverage near the fp16 subnormal/normal and overflow boundaries.
  for (size_t i = 0; i < 20000; ++i) src[i] = from_bits(0x33000000u + static_cast<uint32_t>(i) * 613u);
  for (size_t i = 20000; i < 40000; ++i) src[i] = from_bits(0x477F0000u + static_cast<uint32_t>(i - 20000) * 7u);
  for (DType dt : {DType::BF16, DType::F16}) {
    std::vector<uint16_t> want(n);
    convert_f32(want.data(), dt, src.data(), n, {SimdLevel::Scalar, 1});
    for (SimdLevel path : supported_paths()) {
      std::vector<uint16_t> got(n);
      convert_f32(got.data(), dt, src.data(), n, {path, 2});
      for (size_t i = 0; i < n; ++i)
        ASSERT_EQ(got[i], want[i]) << dtype_name(dt) << " " << simd_level_name(path) << " input bits 0x" << std::hex
                                   << [&] { uint32_t x; std::memcpy(&x, &src[i], 4); return x; }();
    }
  }
}

// bf16 and fp16 results decode back to the nearest representable value (checked in double).
TEST(Convert, RoundsToNearest) {
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> u(-1000.0f, 1000.0f);
  for (int i = 0; i < 20000; ++i) {
    const float f = u(rng);
    const uint16_t b = convert_one(f, DType::BF16, SimdLevel::Scalar);
    const float back = from_bits(static_cast<uint32_t>(b) << 16);
    const float up = from_bits((static_cast<uint32_t>(b) + 1) << 16), down = from_bits((static_cast<uint32_t>(b) - 1) << 16);
    ASSERT_LE(std::abs(double(back) - f), std::abs(double(up) - f)) << f;
    ASSERT_LE(std::abs(double(back) - f), std::abs(double(down) - f)) << f;
  }
}

}  // namespace
}  // namespace zt::offload
