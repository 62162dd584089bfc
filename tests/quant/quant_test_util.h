// Shared by the quantizer tests: an independent decoder of the packed levels, the per-element
// checks every quantized block must pass (bound, ties to even, range, scale rule), and inputs.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/quant/block_quant.h"

namespace zt::test {

// The integer level of every element: int8 bytes as two's complement, int4 nibbles low first.
inline std::vector<int> unpack_levels(const std::vector<uint8_t>& q, const quant::QuantLayout& l) {
  std::vector<int> v(l.n);
  for (size_t i = 0; i < l.n; ++i) {
    if (l.bits == quant::QuantBits::Int8) {
      v[i] = int(int8_t(q[i]));
    } else {
      const int nib = (i % 2 == 0) ? (q[i / 2] & 0xf) : (q[i / 2] >> 4);
      v[i] = nib >= 8 ? nib - 16 : nib;
    }
  }
  return v;
}

// Every finite block: scale within 2^-23 of absmax / qmax (or the subnormal rule: the smallest
// scale not below it), |q| <= qmax, |x - q*scale| <= scale/2 computed exactly (double), and on an
// exact tie q is even. Zero blocks: scale 0 and q 0.
inline void expect_block_rules(const std::vector<float>& x, const std::vector<int>& lv, const std::vector<float>& sc,
                               const quant::QuantLayout& l) {
  const int qmax = quant::quant_max(l.bits);
  size_t failures = 0;
  for (size_t b = 0; b < l.blocks(); ++b) {
    const size_t b0 = b * l.block, b1 = std::min(l.n, b0 + l.block);
    double absmax = 0;
    for (size_t i = b0; i < b1; ++i) absmax = std::max(absmax, std::fabs(double(x[i])));
    const double s = sc[b];
    if (absmax == 0) {
      EXPECT_EQ(sc[b], 0.0f) << "block " << b;
      for (size_t i = b0; i < b1; ++i) EXPECT_EQ(lv[i], 0) << "element " << i;
      continue;
    }
    ASSERT_GT(s, 0.0) << "block " << b;
    const double exact = absmax / qmax;
    if (s >= 0x1p-126) {
      EXPECT_LE(std::fabs(s - exact), 0x1p-23 * exact) << "block " << b;
    } else {
      EXPECT_GE(s, exact) << "block " << b;
    }
    for (size_t i = b0; i < b1 && failures < 10; ++i) {
      const double err = double(x[i]) - double(lv[i]) * s;
      const bool ok = std::abs(lv[i]) <= qmax && std::fabs(err) <= 0.5 * s &&
                      !(std::fabs(err) == 0.5 * s && lv[i] % 2 != 0);
      if (!ok) {
        ++failures;
        ADD_FAILURE() << "element " << i << " x=" << x[i] << " q=" << lv[i] << " scale=" << s << " err=" << err;
      }
    }
  }
}

// Blocks of very different magnitudes (1e-30 .. 1e30), signed, some values exactly on a level.
inline std::vector<float> varied_values(size_t n, size_t block, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int> ex(-100, 100);
  std::vector<float> x(n);
  for (size_t b0 = 0; b0 < n; b0 += block) {
    const float mag = std::ldexp(1.0f, ex(rng));
    for (size_t i = b0; i < std::min(n, b0 + block); ++i) x[i] = nd(rng) * mag;
  }
  return x;
}

}  // namespace zt::test
