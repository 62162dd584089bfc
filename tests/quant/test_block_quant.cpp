// The CPU block quantizers (kernels/quant/block_quant.h): the error bound and ties to even on every
// element, zero blocks, int4 packing at odd lengths, adversarial blocks (one huge element,
// subnormals, signed zeros, inf and NaN refused), bf16 in and out, dequantize-and-add, and every
// SIMD level bit-identical to the scalar one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "base/half_float.h"
#include "kernels/quant/block_quant.h"
#include "kernels/quant/quant_math.h"
#include "tests/model/simd_levels.h"
#include "tests/quant/quant_test_util.h"

namespace zt::quant {
namespace {

using test::expect_block_rules;
using test::unpack_levels;

struct Quantized {
  std::vector<uint8_t> q;
  std::vector<float> scales;
  QuantStatus status;
};

Quantized run_quantize(const std::vector<float>& x, const QuantLayout& l) {
  Quantized r{std::vector<uint8_t>(l.q_bytes(), 0xaa), std::vector<float>(l.blocks(), -1.0f), {}};
  r.status = quantize(x.data(), l, r.q.data(), r.scales.data());
  return r;
}

std::vector<float> run_dequantize(const Quantized& r, const QuantLayout& l) {
  std::vector<float> out(l.n, -7.0f);
  dequantize(r.q.data(), r.scales.data(), l, out.data());
  return out;
}

const QuantBits kBoth[] = {QuantBits::Int8, QuantBits::Int4};

TEST(BlockQuant, RandomBlocksMeetTheBoundAndDequantizeToQTimesScale) {
  for (QuantBits bits : kBoth) {
    const QuantLayout l{bits, 3 * 8000 + 37, 8000};
    const auto x = test::varied_values(l.n, l.block, 11);
    const Quantized r = run_quantize(x, l);
    ASSERT_TRUE(r.status.ok());
    const auto lv = unpack_levels(r.q, l);
    expect_block_rules(x, lv, r.scales, l);
    const auto deq = run_dequantize(r, l);
    for (size_t i = 0; i < l.n; ++i) ASSERT_EQ(deq[i], float(lv[i]) * r.scales[i / l.block]) << quant_bits_name(bits) << " " << i;
  }
}

TEST(BlockQuant, Bf16InputAndOutput) {
  for (QuantBits bits : kBoth) {
    const QuantLayout l{bits, 2 * 512 + 9, 512};
    const auto xf = test::varied_values(l.n, l.block, 12);
    std::vector<uint16_t> xb(l.n);
    std::vector<float> xr(l.n);  // the bf16 values as fp32
    for (size_t i = 0; i < l.n; ++i) {
      xb[i] = f32_to_bf16_bits(xf[i]);
      xr[i] = bf16_bits_to_f32(xb[i]);
    }
    std::vector<uint8_t> q(l.q_bytes());
    std::vector<float> sc(l.blocks());
    ASSERT_TRUE(quantize_bf16(xb.data(), l, q.data(), sc.data()).ok());
    const Quantized from_f32 = run_quantize(xr, l);
    EXPECT_EQ(q, from_f32.q);  // bf16 in == its fp32 value in
    EXPECT_EQ(std::memcmp(sc.data(), from_f32.scales.data(), sc.size() * 4), 0);
    expect_block_rules(xr, unpack_levels(q, l), sc, l);
    std::vector<uint16_t> out(l.n);
    dequantize_bf16(q.data(), sc.data(), l, out.data());
    const auto deq = run_dequantize(from_f32, l);
    for (size_t i = 0; i < l.n; ++i) ASSERT_EQ(out[i], f32_to_bf16_bits(deq[i])) << i;
  }
}

TEST(BlockQuant, DequantizeAddIsSumPlusTheFp32Product) {
  for (QuantBits bits : kBoth) {
    const QuantLayout l{bits, 1000 + 3, 200};
    const auto x = test::varied_values(l.n, l.block, 13);
    const Quantized r = run_quantize(x, l);
    std::vector<float> sum = test::varied_values(l.n, l.n, 14), expect = sum;
    const auto deq = run_dequantize(r, l);
    for (size_t i = 0; i < l.n; ++i) expect[i] = expect[i] + deq[i];
    dequantize_add(r.q.data(), r.scales.data(), l, sum.data());
    EXPECT_EQ(std::memcmp(sum.data(), expect.data(), l.n * 4), 0);
  }
}

TEST(BlockQuant, ExactTiesRoundToEven) {
  // int8, absmax 127 * 0.25: scale exactly 0.25; x = (k + 1/2) * 0.25 is an exact tie for every k.
  {
    const QuantLayout l{QuantBits::Int8, 256, 256};
    std::vector<float> x(l.n);
    x[0] = 127 * 0.25f;
    for (int k = -127; k <= 126; ++k) x[size_t(k + 128)] = (float(k) + 0.5f) * 0.25f;
    x[255] = -0.5f * 0.25f;
    const Quantized r = run_quantize(x, l);
    ASSERT_EQ(r.scales[0], 0.25f);
    const auto lv = unpack_levels(r.q, l);
    for (int k = -127; k <= 126; ++k) {
      const int want = (k % 2 == 0) ? k : k + 1;  // k + 1/2 -> the even one of k, k + 1
      EXPECT_EQ(lv[size_t(k + 128)], want) << "x = (" << k << " + 1/2) * scale";
    }
    EXPECT_EQ(lv[255], 0);
  }
  // int4, absmax 7: scale 1; +-0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -3.5 -> -4, 6.5 -> 6.
  {
    const QuantLayout l{QuantBits::Int4, 7, 8};
    const std::vector<float> x{7.0f, 0.5f, -0.5f, 1.5f, 2.5f, -3.5f, 6.5f};
    const Quantized r = run_quantize(x, l);
    ASSERT_EQ(r.scales[0], 1.0f);
    EXPECT_EQ(unpack_levels(r.q, l), (std::vector<int>{7, 0, 0, 2, 2, -4, 6}));
  }
}

TEST(BlockQuant, ZeroBlocksHaveScaleZeroAndRoundTripExactly) {
  for (QuantBits bits : kBoth) {
    const QuantLayout l{bits, 3 * 64, 64};
    auto x = test::varied_values(l.n, l.block, 15);
    for (size_t i = 64; i < 128; ++i) x[i] = (i % 2) ? -0.0f : 0.0f;
    const Quantized r = run_quantize(x, l);
    ASSERT_TRUE(r.status.ok());
    EXPECT_EQ(r.scales[1], 0.0f);
    const auto deq = run_dequantize(r, l);
    for (size_t i = 64; i < 128; ++i) EXPECT_EQ(deq[i], 0.0f);
    expect_block_rules(x, unpack_levels(r.q, l), r.scales, l);
  }
}

TEST(BlockQuant, Int4PacksLowNibbleFirstAndRoundTripsOddLengths) {
  {
    const QuantLayout l{QuantBits::Int4, 3, 8};
    const Quantized r = run_quantize({7.0f, -7.0f, 3.0f}, l);
    ASSERT_EQ(r.q.size(), 2u);
    EXPECT_EQ(r.q[0], 0x97);  // low nibble 7, high nibble -7 = 0b1001
    EXPECT_EQ(r.q[1], 0x03);  // an odd length leaves the last high nibble 0
  }
  for (size_t n : {1u, 3u, 7u, 9u, 15u, 8001u, 16003u}) {
    const QuantLayout l{QuantBits::Int4, n, 8000};
    const auto x = test::varied_values(n, l.block, 16 + n);
    const Quantized r = run_quantize(x, l);
    ASSERT_EQ(r.q.size(), (n + 1) / 2);
    if (n % 2) {
      EXPECT_EQ(r.q.back() >> 4, 0) << n;
    }
    const auto lv = unpack_levels(r.q, l);
    expect_block_rules(x, lv, r.scales, l);
    const auto deq = run_dequantize(r, l);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(deq[i], float(lv[i]) * r.scales[i / l.block]) << n << " " << i;
  }
}

TEST(BlockQuant, AdversarialBlocks) {
  const float kMax = std::numeric_limits<float>::max(), kDen = std::numeric_limits<float>::denorm_min();
  const std::vector<std::vector<float>> blocks{
      {kMax, 1.0f, -1.0f, 1e30f, -kMax, 0.0f, -0.0f, 3.0f},      // huge elements: the rest go to 0
      {1e30f, 1e-30f, -2e-30f, 1.0f, 0.0f, 5e29f, -5e29f, 2.0f},  // one huge element
      {kDen, -kDen, 2 * kDen, 0.0f, -0.0f, kDen, 0.0f, 0.0f},     // subnormal absmax: scale > 0
      {190 * kDen, 95 * kDen, -190 * kDen, 63 * kDen, 1 * kDen, 0.0f, 0.0f, 0.0f},
      {1e-40f, -3e-39f, 1.17549435e-38f, 2e-38f, 0.0f, -0.0f, 1e-45f, 5e-39f},  // around FLT_MIN
      {0.0f, -0.0f, -0.0f, 0.0f, 0.0f, -0.0f, 0.0f, -0.0f},                     // signed zeros
  };
  for (QuantBits bits : kBoth) {
    for (const auto& x : blocks) {
      const QuantLayout l{bits, x.size(), 8};
      const Quantized r = run_quantize(x, l);
      ASSERT_TRUE(r.status.ok());
      const auto lv = unpack_levels(r.q, l);
      expect_block_rules(x, lv, r.scales, l);
      const auto deq = run_dequantize(r, l);
      float absmax = 0;
      for (float v : x) absmax = std::max(absmax, std::fabs(v));
      for (size_t i = 0; i < x.size(); ++i) {
        EXPECT_TRUE(std::isfinite(deq[i])) << "x=" << x[i];
        // With a normal scale the absmax element takes the top level; a subnormal scale is
        // rounded up to a representable step, which can leave the top levels unused.
        if (std::fabs(x[i]) == absmax && x[i] != 0.0f && r.scales[0] >= std::numeric_limits<float>::min()) {
          EXPECT_EQ(std::abs(lv[i]), quant_max(bits)) << "the absmax element takes the top level";
        }
      }
    }
  }
}

TEST(BlockQuant, NonFiniteBlocksAreRefusedAndDequantizeToNaN) {
  for (QuantBits bits : kBoth) {
    const QuantLayout l{bits, 5 * 16, 16};
    auto x = test::varied_values(l.n, l.block, 17);
    x[16 + 3] = std::numeric_limits<float>::infinity();
    x[48 + 15] = std::numeric_limits<float>::quiet_NaN();
    x[64] = -std::numeric_limits<float>::infinity();
    const Quantized r = run_quantize(x, l);
    EXPECT_FALSE(r.status.ok());
    EXPECT_EQ(r.status.bad_blocks, 3u);
    EXPECT_EQ(r.status.first_bad_block, 1u);
    const auto lv = unpack_levels(r.q, l);
    const auto deq = run_dequantize(r, l);
    for (size_t b : {1u, 3u, 4u}) {
      EXPECT_TRUE(std::isnan(r.scales[b])) << b;
      for (size_t i = b * 16; i < b * 16 + 16; ++i) {
        EXPECT_EQ(lv[i], 0);
        EXPECT_TRUE(std::isnan(deq[i]));
      }
    }
    for (size_t b : {0u, 2u}) EXPECT_TRUE(std::isfinite(r.scales[b]) && r.scales[b] > 0);
    // bf16 inf and NaN are refused the same way.
    std::vector<uint16_t> xb(l.n, f32_to_bf16_bits(1.0f));
    xb[33] = 0x7f80;  // +inf
    xb[70] = 0xffc1;  // NaN
    std::vector<uint8_t> q(l.q_bytes());
    std::vector<float> sc(l.blocks());
    const QuantStatus st = quantize_bf16(xb.data(), l, q.data(), sc.data());
    EXPECT_EQ(st.bad_blocks, 2u);
    EXPECT_EQ(st.first_bad_block, 2u);
  }
}

TEST(BlockQuant, FastAndExactLevelRulesAgreeNearTies) {
  // Values one or two ulps either side of (k + 1/2) * scale, and the ties themselves, for many
  // scales: the division-free rule must give the exact rule's q.
  std::mt19937_64 rng(19);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> ex(-120, 120), kd(-127, 126), ulps(-2, 2);
  for (int trial = 0; trial < 200000; ++trial) {
    for (int qmax : {127, 7}) {
      const float s = std::ldexp(mant(rng), ex(rng));
      const int k = kd(rng) % (qmax + 1);
      float x = float((double(k) + 0.5) * double(s));
      for (int u = ulps(rng); u != 0; u += u > 0 ? -1 : 1) x = std::nextafter(x, u > 0 ? INFINITY : -INFINITY);
      const int exact = quantize_value(x, s, qmax);
      const int fast = quantize_value_fast(x, 1.0f / s, s, 0.5f * s, qmax);
      ASSERT_EQ(fast, exact) << "x=" << x << " scale=" << s << " qmax=" << qmax;
    }
  }
}

TEST(BlockQuant, LayoutRefusesBlocksThatSplitABytePair) {
  EXPECT_THROW((QuantLayout{QuantBits::Int4, 100, 12}.blocks()), std::invalid_argument);
  EXPECT_THROW((QuantLayout{QuantBits::Int8, 100, 0}.blocks()), std::invalid_argument);
  EXPECT_EQ((QuantLayout{QuantBits::Int4, 13, 13}.blocks()), 1u);  // one block covering the span
  EXPECT_EQ((QuantLayout{QuantBits::Int4, 13, 8}.q_bytes()), 7u);
}

// Every output of every entry point, at the current SIMD level.
struct AllOutputs {
  std::vector<uint8_t> q8, q4, qb8, qb4;
  std::vector<float> s8, s4, sb8, sb4, d8, d4, a8, a4;
  std::vector<uint16_t> h8, h4;
};

AllOutputs run_everything(const std::vector<float>& x, const std::vector<uint16_t>& xb, size_t block) {
  AllOutputs o;
  const QuantLayout l8{QuantBits::Int8, x.size(), block}, l4{QuantBits::Int4, x.size(), block};
  auto quant = [&](const QuantLayout& l, std::vector<uint8_t>& q, std::vector<float>& s, bool bf16) {
    q.assign(l.q_bytes(), 0);
    s.assign(l.blocks(), 0);
    if (bf16) quantize_bf16(xb.data(), l, q.data(), s.data());
    else quantize(x.data(), l, q.data(), s.data());
  };
  quant(l8, o.q8, o.s8, false);
  quant(l4, o.q4, o.s4, false);
  quant(l8, o.qb8, o.sb8, true);
  quant(l4, o.qb4, o.sb4, true);
  auto deq = [&](const QuantLayout& l, const std::vector<uint8_t>& q, const std::vector<float>& s,
                 std::vector<float>& d, std::vector<uint16_t>& h, std::vector<float>& a) {
    d.assign(l.n, 0);
    h.assign(l.n, 0);
    a = x;
    dequantize(q.data(), s.data(), l, d.data());
    dequantize_bf16(q.data(), s.data(), l, h.data());
    dequantize_add(q.data(), s.data(), l, a.data());
  };
  deq(l8, o.q8, o.s8, o.d8, o.h8, o.a8);
  deq(l4, o.q4, o.s4, o.d4, o.h4, o.a4);
  return o;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// Every level against the scalar one on n values in blocks of `block`, with ties, a zero block,
// subnormals, a NaN block and a subnormal-scale block inside the compared data.
void expect_levels_bit_identical(size_t n, size_t block) {
  auto x = test::varied_values(n, block, 18);
  for (size_t i = 0; i < 64; ++i) x[i] = (float(int(i) - 32) + 0.5f) * 0.25f;
  x[64] = 127 * 0.25f;
  for (size_t i = block; i < 2 * block; ++i) x[i] = 0.0f;
  x[2 * block + 5] = std::numeric_limits<float>::denorm_min();
  x[3 * block + 1] = std::numeric_limits<float>::quiet_NaN();
  // Block 4: subnormal absmax, so the exact-division path (scale < 2^-125) runs at every level.
  for (size_t i = 4 * block; i < 5 * block; ++i)
    x[i] = float(int(i % 301) - 150) * std::numeric_limits<float>::denorm_min();
  std::vector<uint16_t> xb(n);
  for (size_t i = 0; i < n; ++i) xb[i] = f32_to_bf16_bits(x[i]);
  cpu::set_simd_level(SimdLevel::Scalar);
  const AllOutputs ref = run_everything(x, xb, block);
  // The outputs are what the format says, whichever store path (plain or streaming) wrote them.
  for (size_t i = 0; i < n; ++i) {
    ASSERT_TRUE(same_bits(std::vector<float>{ref.d8[i]}, {float(int8_t(ref.q8[i])) * ref.s8[i / block]})) << i;
    const int nib = (i % 2 == 0) ? (ref.q4[i / 2] & 0xf) : (ref.q4[i / 2] >> 4);
    ASSERT_TRUE(same_bits(std::vector<float>{ref.d4[i]}, {float(nib >= 8 ? nib - 16 : nib) * ref.s4[i / block]})) << i;
  }
  test::for_each_simd_level([&](SimdLevel level) {
    std::printf("quantizers at SIMD level %s, %zu values\n", quant_simd_level_name(), n);
    const AllOutputs o = run_everything(x, xb, block);
    const char* name = simd_level_name(level);
    EXPECT_TRUE(same_bits(o.q8, ref.q8) && same_bits(o.s8, ref.s8)) << name << " int8 fp32";
    EXPECT_TRUE(same_bits(o.q4, ref.q4) && same_bits(o.s4, ref.s4)) << name << " int4 fp32";
    EXPECT_TRUE(same_bits(o.qb8, ref.qb8) && same_bits(o.sb8, ref.sb8)) << name << " int8 bf16";
    EXPECT_TRUE(same_bits(o.qb4, ref.qb4) && same_bits(o.sb4, ref.sb4)) << name << " int4 bf16";
    EXPECT_TRUE(same_bits(o.d8, ref.d8) && same_bits(o.d4, ref.d4)) << name << " dequantize";
    EXPECT_TRUE(same_bits(o.h8, ref.h8) && same_bits(o.h4, ref.h4)) << name << " dequantize_bf16";
    EXPECT_TRUE(same_bits(o.a8, ref.a8) && same_bits(o.a4, ref.a4)) << name << " dequantize_add";
  });
}

TEST(BlockQuant, EverySimdLevelIsBitIdenticalToScalar) { expect_levels_bit_identical(5 * 4096 + 777, 4096); }

// Outputs of 4 MiB and more are written with non-temporal stores: the same bits.
TEST(BlockQuant, EverySimdLevelIsBitIdenticalToScalarWhenStreaming) {
  expect_levels_bit_identical((size_t(4) << 20) + 77, 8000);
}

}  // namespace
}  // namespace zt::quant
