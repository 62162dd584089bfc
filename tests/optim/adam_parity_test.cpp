// optim's reference Adam against the SIMD CPU Adam (offload/), every path it has on this CPU:
// the two must agree bit for bit (same documented operation order and constants).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/backend.h"
#include "offload/cpu_adam.h"
#include "optim/adam.h"

namespace zt {
namespace {

struct Hyper {
  bool decoupled;
  bool bias_correction;
  float wd;
  float grad_scale;
};

TEST(AdamParity, ReferenceEqualsSimdCpuAdamBitwise) {
  const size_t n = 1003;  // not a multiple of any vector width: exercises the tails
  std::vector<float> p0(n), g(n);
  uint32_t s = 7;
  auto next = [&s] {
    s = s * 1664525u + 1013904223u;
    return static_cast<float>(static_cast<int32_t>(s >> 8) - (1 << 23)) / static_cast<float>(1 << 23);
  };
  for (size_t i = 0; i < n; ++i) p0[i] = next();
  const std::vector<Hyper> cases = {{true, true, 0.1f, 1.0f}, {false, true, 0.1f, 0.5f}, {true, false, 0.0f, 0.25f}};
  for (const auto path : {SimdLevel::Scalar, SimdLevel::Avx2, SimdLevel::Avx512}) {
    if (!simd_level_supported(path)) continue;
    for (const auto& c : cases) {
      auto pa = p0, pb = p0;
      std::vector<float> ma(n, 0.0f), va(n, 0.0f), mb(n, 0.0f), vb(n, 0.0f);
      AdamWHyper h;
      h.lr = 3e-3f;
      h.weight_decay = c.wd;
      h.decoupled = c.decoupled;
      h.bias_correction = c.bias_correction;
      h.grad_scale = c.grad_scale;
      for (int step = 1; step <= 3; ++step) {
        for (size_t i = 0; i < n; ++i) g[i] = next();
        h.step = step;
        adam_step(pa, g, ma, va, h);
        offload::CpuAdamOptions opt;
        opt.level = path;
        offload::cpu_adam_step(pb.data(), g.data(), mb.data(), vb.data(), n, h, {}, opt);
      }
      EXPECT_EQ(pa, pb) << simd_level_name(path) << " decoupled=" << c.decoupled;
      EXPECT_EQ(ma, mb);
      EXPECT_EQ(va, vb);
    }
  }
}

// The CPU backend's adamw_step (the Backend interface's simple AdamW) is the same formula.
TEST(AdamParity, CpuBackendAdamWEqualsReferenceBitwise) {
  const size_t n = 70001;  // above the OpenMP threshold, odd
  std::vector<float> p0(n), g(n);
  for (size_t i = 0; i < n; ++i) {
    p0[i] = 0.001f * float(int(i % 2001) - 1000);
    g[i] = 0.0007f * float(int((i * 7919) % 1999) - 999);
  }
  auto be = make_cpu_backend();
  for (bool decoupled : {true, false}) {
    auto pa = p0, pb = p0;
    std::vector<float> ma(n, 0.0f), va(n, 0.0f), mb(n, 0.0f), vb(n, 0.0f);
    AdamWHyper h;
    h.lr = 1e-2f;
    h.weight_decay = 0.1f;
    h.decoupled = decoupled;
    h.grad_scale = 0.5f;
    for (int step = 1; step <= 3; ++step) {
      h.step = step;
      adam_step(pa, g, ma, va, h);
      be->adamw_step(pb.data(), g.data(), mb.data(), vb.data(), n, h);
    }
    EXPECT_EQ(pa, pb) << "decoupled=" << decoupled;
    EXPECT_EQ(ma, mb);
    EXPECT_EQ(va, vb);
  }
}

}  // namespace
}  // namespace zt
