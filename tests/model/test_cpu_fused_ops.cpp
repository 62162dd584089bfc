// The CPU backend's fused ops against the unfused ops they replace (bias + GELU after a matmul, the
// GELU backward in the next matmul's, residual + LayerNorm, the padded-vocabulary LM head), the
// vectorised exp and GELU against float64, and every SIMD variant this CPU has against the scalar one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/simd.h"
#include "tests/model/simd_levels.h"
#include "kernels/cpu/vec_math.h"
#include "tests/model/random_values.h"

namespace zt {
namespace {

using Vec = std::vector<float>;
const float kNaN = std::numeric_limits<float>::quiet_NaN();

using test::randn;

bool bitwise_equal(const Vec& a, const Vec& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

double max_rel_diff(const Vec& a, const Vec& b) {
  double scale = 0, worst = 0;
  for (float x : b) scale = std::max(scale, double(std::abs(x)));
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::abs(double(a[i]) - double(b[i]));
    worst = std::isnan(d) ? INFINITY : std::max(worst, d);
  }
  return scale > 0 ? worst / scale : worst;
}

// Shapes that leave partial GEMM row chunks (64) and channel chunks (64), and odd widths.
constexpr int N = 130, IC = 72, OC = 197;

TEST(CpuFused, MatmulBiasGeluEqualsMatmulThenGelu) {
  auto be = make_cpu_backend();
  const Vec x = randn(size_t(N) * IC, 1), w = randn(size_t(OC) * IC, 2, 0.2f), b = randn(OC, 3);
  Vec pre(size_t(N) * OC, kNaN), out(pre.size(), kNaN), pre_ref(pre.size()), out_ref(pre.size());
  be->matmul_bias_gelu_forward(out.data(), pre.data(), x.data(), w.data(), b.data(), N, IC, OC);
  be->matmul_forward(pre_ref.data(), x.data(), w.data(), b.data(), N, IC, OC);
  be->gelu_forward(out_ref.data(), pre_ref.data(), pre_ref.size());
  EXPECT_TRUE(bitwise_equal(pre, pre_ref));
  EXPECT_TRUE(bitwise_equal(out, out_ref));
}

TEST(CpuFused, MatmulBackwardGeluEqualsMatmulBackwardThenGeluBackward) {
  // The layer after the GELU: its input is gelu(pre) [N, IC], its output grad dout [N, OC].
  auto be = make_cpu_backend();
  const Vec pre = randn(size_t(N) * IC, 4, 2.f), w = randn(size_t(OC) * IC, 5, 0.2f), dout = randn(size_t(N) * OC, 6);
  Vec act(pre.size());
  be->gelu_forward(act.data(), pre.data(), pre.size());
  Vec dpre(pre.size(), kNaN), dw = randn(w.size(), 7), db = randn(OC, 8);  // dw, db accumulate
  Vec dw_ref = dw, db_ref = db, dact(pre.size(), 0.f), dpre_ref(pre.size(), 0.f);
  be->matmul_backward_gelu(dpre.data(), dw.data(), db.data(), dout.data(), act.data(), pre.data(), w.data(), N, IC, OC);
  be->matmul_backward(dact.data(), dw_ref.data(), db_ref.data(), dout.data(), act.data(), w.data(), N, IC, OC);
  be->gelu_backward(dpre_ref.data(), pre.data(), dact.data(), pre.size());
  EXPECT_TRUE(bitwise_equal(dpre, dpre_ref));
  EXPECT_TRUE(bitwise_equal(dw, dw_ref));
  EXPECT_TRUE(bitwise_equal(db, db_ref));
}

TEST(CpuFused, ResidualLayernormEqualsResidualThenLayernorm) {
  auto be = make_cpu_backend();
  const int C = 200;
  const Vec a = randn(size_t(N) * C, 9), b = randn(size_t(N) * C, 10), w = randn(C, 11), bias = randn(C, 12);
  Vec r(a.size(), kNaN), out(a.size(), kNaN), mean(N, kNaN), rstd(N, kNaN);
  be->residual_layernorm_forward(r.data(), out.data(), mean.data(), rstd.data(), a.data(), b.data(), w.data(),
                                 bias.data(), N, C);
  Vec r_ref(a.size()), out_ref(a.size()), mean_ref(N), rstd_ref(N);
  be->residual_forward(r_ref.data(), a.data(), b.data(), a.size());
  be->layernorm_forward(out_ref.data(), mean_ref.data(), rstd_ref.data(), r_ref.data(), w.data(), bias.data(), N, C);
  EXPECT_TRUE(bitwise_equal(r, r_ref));
  EXPECT_LE(max_rel_diff(mean, mean_ref), 1e-6);
  EXPECT_LE(max_rel_diff(rstd, rstd_ref), 1e-6);
  EXPECT_LE(max_rel_diff(out, out_ref), 1e-6);
  // resid may alias an input (the model writes the block's r2 over the attention branch).
  Vec inplace = a;
  be->residual_layernorm_forward(inplace.data(), out.data(), mean.data(), rstd.data(), inplace.data(), b.data(),
                                 w.data(), bias.data(), N, C);
  EXPECT_TRUE(bitwise_equal(inplace, r));
}

TEST(CpuFused, LmHeadOverPaddedVocabEqualsPlainMatmul) {
  auto be = make_cpu_backend();
  const int C = 48, V = 61, Vp = 128;
  const Vec x = randn(size_t(N) * C, 13), w = randn(size_t(V) * C, 14, 0.3f);
  Vec logits(size_t(N) * Vp, kNaN), plain(size_t(N) * V);
  be->lm_head_forward(logits.data(), x.data(), w.data(), N, C, V, Vp);
  be->matmul_forward(plain.data(), x.data(), w.data(), nullptr, N, C, V);
  for (int n = 0; n < N; ++n) {
    ASSERT_EQ(std::memcmp(&logits[size_t(n) * Vp], &plain[size_t(n) * V], size_t(V) * 4), 0) << "row " << n;
    for (int v = V; v < Vp; ++v) ASSERT_EQ(logits[size_t(n) * Vp + v], 0.f) << "padded logit " << n << "," << v;
  }
  // Backward reads only the V real columns of each Vp row (the padding is poisoned here).
  const Vec g = randn(size_t(N) * V, 15);
  Vec gp(size_t(N) * Vp, kNaN);
  for (int n = 0; n < N; ++n) std::memcpy(&gp[size_t(n) * Vp], &g[size_t(n) * V], size_t(V) * 4);
  Vec dx = randn(x.size(), 16), dw = randn(w.size(), 17), dx_ref = dx, dw_ref = dw;
  be->lm_head_backward(dx.data(), dw.data(), gp.data(), x.data(), w.data(), N, C, V, Vp);
  be->matmul_backward(dx_ref.data(), dw_ref.data(), nullptr, g.data(), x.data(), w.data(), N, C, V);
  EXPECT_TRUE(bitwise_equal(dx, dx_ref));
  EXPECT_TRUE(bitwise_equal(dw, dw_ref));
}

TEST(CpuVecMath, ExpWithinTwoUlpOfFloat64) {
  double worst = 0;
  float at = 0;
  for (float x = -87.f; x <= 88.f; x += 0.001373f) {
    const double ref = std::exp(double(x));
    const double rel = std::abs(double(cpu::vm::exp(x)) - ref) / ref;
    if (rel > worst) worst = rel, at = x;
  }
  EXPECT_LE(worst, 2.5e-7) << "at x = " << at;  // 2 ulp of float is 2.4e-7 relative at worst
  EXPECT_EQ(cpu::vm::exp(-100.f), 0.f);
  EXPECT_EQ(cpu::vm::exp(-INFINITY), 0.f);
  EXPECT_EQ(cpu::vm::exp(0.f), 1.f);
  EXPECT_TRUE(std::isnan(cpu::vm::exp(kNaN)));
}

TEST(CpuVecMath, GeluAndItsGradientMatchTheTanhFormInFloat64) {
  double worst_v = 0, worst_g = 0;
  for (float x = -12.f; x <= 12.f; x += 0.0007f) {
    const double xd = x, u = 0.7978845608028654 * (xd + 0.044715 * xd * xd * xd), th = std::tanh(u);
    const double val = 0.5 * xd * (1 + th);
    const double grad = 0.5 * (1 + th) + 0.5 * xd * (1 - th * th) * 0.7978845608028654 * (1 + 3 * 0.044715 * xd * xd);
    worst_v = std::max(worst_v, std::abs(cpu::vm::gelu(x) - val) / std::max(1.0, std::abs(val)));
    worst_g = std::max(worst_g, std::abs(cpu::vm::gelu_grad(x) - grad));
  }
  EXPECT_LE(worst_v, 1e-6);
  EXPECT_LE(worst_g, 2e-6);
}

TEST(CpuSimdLevels, EveryVariantAgreesWithScalar) {
  std::printf("SIMD level the backend runs here: %s\n", simd_level_name(cpu::simd_level()));
  const int C = 200, T = 70, NH = 2, Vp = 128, V = 97;
  const Vec x = randn(size_t(N) * C, 20, 2.f), w = randn(C, 21), b = randn(C, 22), g = randn(size_t(N) * C, 23);
  const Vec qkv = randn(size_t(T) * 3 * C, 24), dout = randn(size_t(T) * C, 25), logit_src = randn(size_t(N) * Vp, 26, 3.f);
  std::vector<int32_t> targets(N);
  for (int n = 0; n < N; ++n) targets[size_t(n)] = n % 7 == 3 ? -1 : (n * 31) % V;
  struct Out {
    Vec gelu, dgelu, ln, mean, rstd, dln, dw, db, att, lse, dqkv, losses, dlogits;
  };
  auto run = [&] {
    Out o;
    o.gelu.resize(x.size());
    o.dgelu.assign(x.size(), 0.5f);
    cpu::gelu_forward(o.gelu.data(), x.data(), x.size());
    cpu::gelu_backward(o.dgelu.data(), x.data(), g.data(), x.size());
    o.ln.resize(x.size()), o.mean.resize(N), o.rstd.resize(N), o.dln.assign(x.size(), 0.f);
    o.dw.assign(C, 0.f), o.db.assign(C, 0.f);
    cpu::layernorm_forward(o.ln.data(), o.mean.data(), o.rstd.data(), x.data(), w.data(), b.data(), N, C);
    cpu::layernorm_backward(o.dln.data(), o.dw.data(), o.db.data(), g.data(), x.data(), w.data(), o.mean.data(),
                            o.rstd.data(), N, C);
    o.att.resize(size_t(T) * C);
    Vec saved(cpu::attention_saved_bytes(1, T, C, NH) / 4);
    o.dqkv.assign(qkv.size(), 0.f);
    cpu::attention_forward(o.att.data(), saved.data(), qkv.data(), 1, T, C, NH);
    cpu::attention_backward(o.dqkv.data(), dout.data(), qkv.data(), saved.data(), 1, T, C, NH);
    o.lse.assign(saved.begin(), saved.begin() + NH * T);
    o.losses.resize(N);
    o.dlogits = logit_src;
    cpu::crossentropy_forward_backward(o.losses.data(), o.dlogits.data(), o.dlogits.data(), targets.data(), N, V, Vp,
                                       0.5f);
    return o;
  };
  Out ref;
  test::for_each_simd_level([&](SimdLevel l) {
    SCOPED_TRACE(simd_level_name(l));
    Out o = run();
    if (l == SimdLevel::Scalar) {
      ref = o;
      return;
    }
    // Elementwise: the same operations per element in every variant, so the same bits.
    EXPECT_TRUE(bitwise_equal(o.gelu, ref.gelu));
    EXPECT_TRUE(bitwise_equal(o.dgelu, ref.dgelu));
    EXPECT_TRUE(bitwise_equal(o.db, ref.db));  // sums over rows, rows in order: elementwise per channel
    // Sums along a row group their terms by the vector width: equal to rounding.
    for (auto [got, want, name] : {std::tuple{&o.ln, &ref.ln, "layernorm"}, {&o.mean, &ref.mean, "mean"},
                                   {&o.rstd, &ref.rstd, "rstd"}, {&o.dln, &ref.dln, "layernorm dinp"},
                                   {&o.dw, &ref.dw, "layernorm dw"},
                                   {&o.att, &ref.att, "attention"}, {&o.lse, &ref.lse, "lse"},
                                   {&o.dqkv, &ref.dqkv, "attention dqkv"}, {&o.losses, &ref.losses, "losses"},
                                   {&o.dlogits, &ref.dlogits, "dlogits"}})
      EXPECT_LE(max_rel_diff(*got, *want), 1e-5) << name;
  });
}

TEST(CpuSimdLevels, UnsupportedLevelIsRefused) {
  for (SimdLevel l : {SimdLevel::Avx2, SimdLevel::Avx512})
    if (!simd_level_supported(l)) {
      EXPECT_THROW(cpu::set_simd_level(l), std::runtime_error);
    }
  EXPECT_NO_THROW(cpu::set_simd_level(cpu::simd_level()));
}

}  // namespace
}  // namespace zt
