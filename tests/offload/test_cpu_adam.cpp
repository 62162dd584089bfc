// Tests for the SIMD CPU Adam: every path against a plain reference (bitwise) and against a
// double-precision textbook AdamW (ulp bound), fused copies, ZT_SIMD, threads, padding canaries.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "offload/cpu_adam.h"
#include "tests/common/scoped_env.h"

namespace zt::offload {
namespace {

std::vector<SimdLevel> supported_paths() {
  std::vector<SimdLevel> out{SimdLevel::Scalar};
  if (simd_level_supported(SimdLevel::Avx2)) out.push_back(SimdLevel::Avx2);
  if (simd_level_supported(SimdLevel::Avx512)) out.push_back(SimdLevel::Avx512);
  return out;
}

// The documented formula written out plainly, element by element.
void reference_step(std::vector<float>& p, const std::vector<float>& g, std::vector<float>& m,
                    std::vector<float>& v, size_t n, const AdamWHyper& h) {
  const detail::AdamConsts c = detail::make_adam_consts(h);
  for (size_t i = 0; i < n; ++i) {
    float gi = g[i] * c.grad_scale;
    if (!h.decoupled && h.weight_decay != 0.0f) gi = gi + h.weight_decay * p[i];
    m[i] = c.beta1 * m[i] + c.one_minus_beta1 * gi;
    v[i] = c.beta2 * v[i] + c.one_minus_beta2 * (gi * gi);
    const float den = std::sqrt(v[i]) * c.inv_sqrt_bc2 + c.eps;
    p[i] = p[i] * c.decay;
    p[i] = p[i] - c.step_size * (m[i] / den);
  }
}

struct Shard {
  std::vector<float> p, g, m, v;
};

Shard random_shard(size_t n, uint32_t seed, size_t pad = 0) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  Shard s;
  s.p.resize(n + pad);
  s.g.resize(n + pad);
  s.m.resize(n + pad);
  s.v.resize(n + pad);
  for (size_t i = 0; i < n + pad; ++i) {
    s.p[i] = nd(rng);
    s.g[i] = nd(rng) * 0.1f;
    s.m[i] = nd(rng) * 0.01f;
    s.v[i] = std::abs(nd(rng)) * 1e-4f;
  }
  return s;
}

AdamWHyper random_hyper(std::mt19937& rng, bool decoupled, bool bias_correction) {
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  AdamWHyper h;
  h.lr = 1e-4f + u(rng) * 1e-2f;
  h.beta1 = 0.8f + 0.19f * u(rng);
  h.beta2 = 0.95f + 0.049f * u(rng);
  h.eps = 1e-8f * (1.0f + 10.0f * u(rng));
  h.weight_decay = 0.01f + 0.1f * u(rng);
  h.decoupled = decoupled;
  h.bias_correction = bias_correction;
  h.step = 1 + static_cast<int>(u(rng) * 20);
  h.grad_scale = 0.25f + u(rng);  // != 1: unscale and clip folded in
  return h;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

const size_t kLengths[] = {1, 7, 8, 15, 16, 1000003};

TEST(CpuAdam, EveryPathMatchesReferenceBitwise) {
  std::mt19937 rng(42);
  for (size_t n : kLengths) {
    for (int variant = 0; variant < 4; ++variant) {
      const AdamWHyper h = random_hyper(rng, variant & 1, variant & 2);
      const Shard start = random_shard(n, static_cast<uint32_t>(n * 7 + variant));
      Shard ref = start;
      for (int step = 0; step < 2; ++step) {
        AdamWHyper hs = h;
        hs.step += step;
        reference_step(ref.p, ref.g, ref.m, ref.v, n, hs);
      }
      for (SimdLevel path : supported_paths()) {
        Shard got = start;
        for (int step = 0; step < 2; ++step) {  // two steps: state produced by the kernel feeds back
          AdamWHyper hs = h;
          hs.step += step;
          cpu_adam_step(got.p.data(), got.g.data(), got.m.data(), got.v.data(), n, hs, {}, {path, 0});
        }
        ASSERT_TRUE(same_bits(ref.p, got.p)) << simd_level_name(path) << " n=" << n << " variant " << variant;
        ASSERT_TRUE(same_bits(ref.m, got.m)) << simd_level_name(path) << " n=" << n;
        ASSERT_TRUE(same_bits(ref.v, got.v)) << simd_level_name(path) << " n=" << n;
      }
    }
  }
}

// Independent of our operation order: PyTorch's AdamW formula in double precision. The fp32
// result must be within a few ulp of p plus a small relative error of the update.
TEST(CpuAdam, CloseToDoublePrecisionTextbookAdamW) {
  std::mt19937 rng(7);
  const size_t n = 4099;
  for (int variant = 0; variant < 4; ++variant) {
    const AdamWHyper h = random_hyper(rng, variant & 1, variant & 2);
    Shard s = random_shard(n, 99 + variant);
    const Shard before = s;
    cpu_adam_step(s.p.data(), s.g.data(), s.m.data(), s.v.data(), n, h);
    const double bc1 = h.bias_correction ? 1.0 - std::pow(double(h.beta1), h.step) : 1.0;
    const double bc2 = h.bias_correction ? 1.0 - std::pow(double(h.beta2), h.step) : 1.0;
    for (size_t i = 0; i < n; ++i) {
      double p = before.p[i], g = double(before.g[i]) * h.grad_scale;
      // Size of the terms before any cancellation: float rounding is relative to these.
      double gmag = std::abs(g);
      if (!h.decoupled) {
        g += double(h.weight_decay) * p;
        gmag += std::abs(double(h.weight_decay) * p);
      }
      const double m = h.beta1 * double(before.m[i]) + (1.0 - h.beta1) * g;
      const double v = h.beta2 * double(before.v[i]) + (1.0 - h.beta2) * g * g;
      const double m_tol = 4e-7 * (h.beta1 * std::abs(double(before.m[i])) + (1.0 - h.beta1) * gmag);
      const double v_tol = 4e-7 * (h.beta2 * double(before.v[i]) + (1.0 - h.beta2) * gmag * gmag);
      if (h.decoupled) p *= 1.0 - double(h.lr) * h.weight_decay;
      const double den = std::sqrt(v) / std::sqrt(bc2) + h.eps;
      const double upd = (h.lr / bc1) * m / den;
      const double want = p - upd;
      const double tol = 4.0 * std::ldexp(1.0, std::ilogb(std::abs(p) + std::abs(upd)) - 23) + 1e-5 * std::abs(upd) +
                         (h.lr / bc1) * m_tol / den * 2.0;
      ASSERT_NEAR(s.p[i], want, tol) << "i=" << i << " variant " << variant;
      ASSERT_NEAR(s.m[i], m, m_tol) << i;
      ASSERT_NEAR(s.v[i], v, v_tol) << i;
    }
  }
}

TEST(CpuAdam, FusedLowPrecisionCopyEqualsConvertingTheResult) {
  std::mt19937 rng(3);
  for (size_t n : kLengths) {
    const Shard start = random_shard(n, 5 + static_cast<uint32_t>(n));
    for (DType dt : {DType::BF16, DType::F16}) {
      for (SimdLevel path : supported_paths()) {
        const AdamWHyper h = random_hyper(rng, true, true);
        Shard s = start;
        std::vector<uint16_t> fused(n), separate(n), scalar_conv(n);
        cpu_adam_step(s.p.data(), s.g.data(), s.m.data(), s.v.data(), n, h, {fused.data(), dt}, {path, 0});
        convert_f32(separate.data(), dt, s.p.data(), n, {path, 0});
        convert_f32(scalar_conv.data(), dt, s.p.data(), n, {SimdLevel::Scalar, 0});
        ASSERT_EQ(fused, separate) << dtype_name(dt) << " " << simd_level_name(path) << " n=" << n;
        ASSERT_EQ(fused, scalar_conv) << dtype_name(dt) << " " << simd_level_name(path) << " n=" << n;
      }
    }
  }
}

TEST(CpuAdam, ResultDoesNotDependOnThreadCount) {
  const size_t n = 1000003;
  const Shard start = random_shard(n, 11);
  std::mt19937 rng(12);
  const AdamWHyper h = random_hyper(rng, false, true);
  Shard first;
  std::vector<uint16_t> first_copy;
  for (int threads : {1, 2, 3, 7}) {
    Shard s = start;
    std::vector<uint16_t> copy(n);
    cpu_adam_step(s.p.data(), s.g.data(), s.m.data(), s.v.data(), n, h, {copy.data(), DType::BF16}, {std::nullopt, threads});
    if (threads == 1) {
      first = s;
      first_copy = copy;
      continue;
    }
    EXPECT_TRUE(same_bits(first.p, s.p)) << threads << " threads";
    EXPECT_TRUE(same_bits(first.m, s.m)) << threads << " threads";
    EXPECT_TRUE(same_bits(first.v, s.v)) << threads << " threads";
    EXPECT_EQ(first_copy, copy) << threads << " threads";
  }
}

TEST(CpuAdam, NothingBeyondNIsTouched) {
  const size_t pad = 40;
  const float canary = -12345.678f;
  for (SimdLevel path : supported_paths()) {
    for (size_t n : {size_t(1), size_t(7), size_t(8), size_t(15), size_t(16), size_t(100003)}) {
      Shard s = random_shard(n, 21, pad);
      for (auto* a : {&s.p, &s.g, &s.m, &s.v})
        for (size_t i = n; i < n + pad; ++i) (*a)[i] = canary;
      std::vector<uint16_t> copy(n + pad, 0xBEEF);
      AdamWHyper h;
      h.weight_decay = 0.1f;
      cpu_adam_step(s.p.data(), s.g.data(), s.m.data(), s.v.data(), n, h, {copy.data(), DType::BF16}, {path, 2});
      for (auto* a : {&s.p, &s.g, &s.m, &s.v})
        for (size_t i = n; i < n + pad; ++i) ASSERT_EQ((*a)[i], canary) << simd_level_name(path) << " n=" << n << " i=" << i;
      for (size_t i = n; i < n + pad; ++i) ASSERT_EQ(copy[i], 0xBEEF) << simd_level_name(path) << " n=" << n;
      ASSERT_NE(s.p[n - 1], canary);
    }
  }
}

TEST(CpuAdam, NanParamStaysNanInEveryOutput) {
  for (SimdLevel path : supported_paths()) {
    const size_t n = 33;
    Shard s = random_shard(n, 4);
    s.p[3] = std::nanf("");
    s.p[20] = -std::nanf("");
    std::vector<uint16_t> bf(n), hf(n);
    AdamWHyper h;
    Shard s2 = s;
    cpu_adam_step(s.p.data(), s.g.data(), s.m.data(), s.v.data(), n, h, {bf.data(), DType::BF16}, {path, 1});
    cpu_adam_step(s2.p.data(), s2.g.data(), s2.m.data(), s2.v.data(), n, h, {hf.data(), DType::F16}, {path, 1});
    for (size_t i : {size_t(3), size_t(20)}) {
      EXPECT_TRUE(std::isnan(s.p[i]));
      EXPECT_EQ(bf[i] & 0x7F80, 0x7F80);
      EXPECT_NE(bf[i] & 0x007F, 0);
      EXPECT_EQ(hf[i] & 0x7C00, 0x7C00);
      EXPECT_NE(hf[i] & 0x03FF, 0);
    }
  }
}

using test::ScopedEnv;

// The rule itself (ZT_SIMD values, unsupported levels) is tests/common/simd_test.cpp's; here the
// CPU Adam follows it at every call.
TEST(CpuAdam, ZtSimdForcesAPath) {
  {
    ScopedEnv env("ZT_SIMD", "sse9");
    float p = 1, g = 1, m = 0, v = 0;
    EXPECT_THROW(cpu_adam_step(&p, &g, &m, &v, 1, AdamWHyper{}), std::runtime_error);
  }
  for (SimdLevel level : {SimdLevel::Avx2, SimdLevel::Avx512}) {
    float p = 1, g = 1, m = 0, v = 0;
    if (simd_level_supported(level)) EXPECT_NO_THROW(cpu_adam_step(&p, &g, &m, &v, 1, AdamWHyper{}, {}, {level, 1}));
    else EXPECT_THROW(cpu_adam_step(&p, &g, &m, &v, 1, AdamWHyper{}, {}, {level, 1}), std::runtime_error);
  }
}

TEST(CpuAdam, ForcedScalarPathGivesSameBitsAsAuto) {
  const size_t n = 4099;
  Shard a = random_shard(n, 8), b = a;
  AdamWHyper h;
  h.weight_decay = 0.05f;
  cpu_adam_step(a.p.data(), a.g.data(), a.m.data(), a.v.data(), n, h);
  {
    ScopedEnv env("ZT_SIMD", "scalar");
    cpu_adam_step(b.p.data(), b.g.data(), b.m.data(), b.v.data(), n, h);
  }
  EXPECT_TRUE(same_bits(a.p, b.p));
}

TEST(CpuAdam, RejectsBadArguments) {
  float p = 1, g = 1, m = 0, v = 0;
  AdamWHyper h;
  h.step = 0;
  EXPECT_THROW(cpu_adam_step(&p, &g, &m, &v, 1, h), std::invalid_argument);
  float out = 0;
  EXPECT_THROW(cpu_adam_step(&p, &g, &m, &v, 1, AdamWHyper{}, {&out, DType::F32}), std::invalid_argument);
}

}  // namespace
}  // namespace zt::offload
