// Llama's CPU ops against float64: RMSNorm (and fused with the residual add), RoPE, SwiGLU and
// grouped-query attention forward against straightforward double-precision references, their
// backwards against central finite differences of those references; RoPE's backward undoing its
// forward; GQA equal to multi-head attention over replicated K/V (and NKV == NH equal to the
// multi-head entry point bit for bit); the embedding without a position table; every SIMD variant
// this CPU has against the scalar one; the llama3 frequency rule against values worked out from its
// formula; the Backend entry points and their op records.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/cpu_threads.h"
#include "kernels/cpu/simd.h"
#include "kernels/op_record.h"
#include "kernels/rope_table.h"
#include "tests/model/random_values.h"
#include "tests/model/simd_levels.h"

namespace zt {
namespace {

using Vec = std::vector<float>;
using DVec = std::vector<double>;
using test::randn;
const float kNaN = std::numeric_limits<float>::quiet_NaN();

bool bitwise_equal(const Vec& a, const Vec& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

// max |got - want| / max |want| (NaN: infinity).
double rel_err(const Vec& got, const DVec& want) {
  double scale = 0, worst = 0;
  for (double w : want) scale = std::max(scale, std::abs(w));
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = std::abs(double(got[i]) - want[i]);
    worst = std::isnan(d) ? INFINITY : std::max(worst, d);
  }
  return scale > 0 ? worst / scale : worst;
}
double rel_err(const Vec& got, const Vec& want) { return rel_err(got, DVec(want.begin(), want.end())); }

DVec to_d(const Vec& v) { return DVec(v.begin(), v.end()); }

// Central differences of the scalar f at x (double), step h, every element.
DVec finite_diff(const std::function<double(const DVec&)>& f, DVec x, double h = 1e-5) {
  DVec g(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double x0 = x[i];
    x[i] = x0 + h;
    const double up = f(x);
    x[i] = x0 - h;
    const double down = f(x);
    x[i] = x0;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

double dot(const DVec& a, const Vec& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// ---------------------------------------------------------------------------------------------
// References in double.

DVec ref_rmsnorm(const DVec& x, const DVec& w, int N, int C, double eps, DVec* rstd = nullptr) {
  DVec out(x.size());
  if (rstd) rstd->resize(size_t(N));
  for (int n = 0; n < N; ++n) {
    double ss = 0;
    for (int c = 0; c < C; ++c) ss += x[size_t(n) * C + c] * x[size_t(n) * C + c];
    const double r = 1.0 / std::sqrt(ss / C + eps);
    if (rstd) (*rstd)[size_t(n)] = r;
    for (int c = 0; c < C; ++c) out[size_t(n) * C + c] = w[size_t(c)] * x[size_t(n) * C + c] * r;
  }
  return out;
}

// Rotates the first `heads` heads of each row by the table's angles (as given, in double).
DVec ref_rope(const DVec& x, const RopeTable& tab, int B, int T, int heads, int hd, int stride) {
  DVec y = x;
  const int half = hd / 2;
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t)
      for (int h = 0; h < heads; ++h)
        for (int i = 0; i < half; ++i) {
          const size_t a = (size_t(b) * T + t) * stride + size_t(h) * hd + i, bb = a + half;
          const double c = tab.cos[size_t(t) * half + i], s = tab.sin[size_t(t) * half + i];
          y[a] = x[a] * c - x[bb] * s;
          y[bb] = x[bb] * c + x[a] * s;
        }
  return y;
}

DVec ref_swiglu(const DVec& gu, int N, int F) {
  DVec out(size_t(N) * F);
  for (int n = 0; n < N; ++n)
    for (int f = 0; f < F; ++f) {
      const double g = gu[size_t(n) * 2 * F + f], u = gu[size_t(n) * 2 * F + F + f];
      out[size_t(n) * F + f] = g / (1 + std::exp(-g)) * u;
    }
  return out;
}

// Causal GQA over qkv [B, T, (NH + 2 NKV) hs]: query head h uses key/value head h / (NH / NKV).
DVec ref_gqa(const DVec& qkv, int B, int T, int NH, int NKV, int hs) {
  const int W = (NH + 2 * NKV) * hs, C = NH * hs, G = NH / NKV;
  DVec out(size_t(B) * T * C);
  const double scale = 1 / std::sqrt(double(hs));
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h) {
      const int g = h / G;
      for (int t = 0; t < T; ++t) {
        const double* q = &qkv[(size_t(b) * T + t) * W + size_t(h) * hs];
        DVec s(size_t(t) + 1);
        double mx = -INFINITY;
        for (int u = 0; u <= t; ++u) {
          const double* k = &qkv[(size_t(b) * T + u) * W + C + size_t(g) * hs];
          double d = 0;
          for (int i = 0; i < hs; ++i) d += q[i] * k[i];
          s[size_t(u)] = d * scale;
          mx = std::max(mx, s[size_t(u)]);
        }
        double z = 0;
        for (double& v : s) z += (v = std::exp(v - mx));
        for (int i = 0; i < hs; ++i) {
          double o = 0;
          for (int u = 0; u <= t; ++u) o += s[size_t(u)] * qkv[(size_t(b) * T + u) * W + C + size_t(NKV + g) * hs + i];
          out[(size_t(b) * T + t) * C + size_t(h) * hs + i] = o / z;
        }
      }
    }
  return out;
}

// ---------------------------------------------------------------------------------------------
// RMSNorm

TEST(LlamaOps, RmsNormForwardMatchesFloat64) {
  const int N = 37, C = 203;  // partial row blocks (16) and channel chunks (64)
  const float eps = 1e-5f;
  const Vec x = randn(size_t(N) * C, 1, 1.5f), w = randn(C, 2);
  Vec out(x.size(), kNaN), rstd(N, kNaN);
  cpu::rmsnorm_forward(out.data(), rstd.data(), x.data(), w.data(), N, C, eps);
  DVec rr;
  const DVec want = ref_rmsnorm(to_d(x), to_d(w), N, C, eps, &rr);
  EXPECT_LE(rel_err(out, want), 1e-6);
  EXPECT_LE(rel_err(rstd, rr), 1e-6);
  // eps is the caller's: a large one must show.
  cpu::rmsnorm_forward(out.data(), rstd.data(), x.data(), w.data(), N, C, 1.0f);
  EXPECT_LE(rel_err(out, ref_rmsnorm(to_d(x), to_d(w), N, C, 1.0)), 1e-6);
}

TEST(LlamaOps, RmsNormBackwardMatchesFiniteDifferences) {
  const int N = 5, C = 70;
  const double eps = 1e-5;
  const Vec x = randn(size_t(N) * C, 3), w = randn(C, 4), g = randn(size_t(N) * C, 5);
  Vec out(x.size()), rstd(N);
  cpu::rmsnorm_forward(out.data(), rstd.data(), x.data(), w.data(), N, C, float(eps));
  const Vec base_x = randn(x.size(), 6), base_w = randn(C, 7);  // both accumulate
  Vec dx = base_x, dw = base_w;
  cpu::rmsnorm_backward(dx.data(), dw.data(), g.data(), x.data(), w.data(), rstd.data(), N, C);
  for (size_t i = 0; i < dx.size(); ++i) dx[i] -= base_x[i];
  for (size_t i = 0; i < dw.size(); ++i) dw[i] -= base_w[i];
  const DVec wd = to_d(w), xd = to_d(x);
  const DVec fx = finite_diff([&](const DVec& v) { return dot(ref_rmsnorm(v, wd, N, C, eps), g); }, xd);
  const DVec fw = finite_diff([&](const DVec& v) { return dot(ref_rmsnorm(xd, v, N, C, eps), g); }, wd);
  EXPECT_LE(rel_err(dx, fx), 1e-5);
  EXPECT_LE(rel_err(dw, fw), 1e-5);
}

TEST(LlamaOps, ResidualRmsNormEqualsResidualThenRmsNorm) {
  auto be = make_cpu_backend();
  const int N = 37, C = 203;
  const float eps = 1e-5f;
  const Vec a = randn(size_t(N) * C, 40), b = randn(a.size(), 41), w = randn(C, 42);
  Vec r(a.size(), kNaN), out(a.size(), kNaN), rstd(N, kNaN);
  be->residual_rmsnorm_forward(r.data(), out.data(), rstd.data(), a.data(), b.data(), w.data(), N, C, eps);
  Vec r_ref(a.size()), out_ref(a.size()), rstd_ref(N);
  be->residual_forward(r_ref.data(), a.data(), b.data(), a.size());
  be->rmsnorm_forward(out_ref.data(), rstd_ref.data(), r_ref.data(), w.data(), N, C, eps);
  EXPECT_TRUE(bitwise_equal(r, r_ref));
  EXPECT_LE(rel_err(rstd, rstd_ref), 1e-6);
  EXPECT_LE(rel_err(out, out_ref), 1e-6);
  Vec inplace = a;  // resid may alias an input
  be->residual_rmsnorm_forward(inplace.data(), out.data(), rstd.data(), inplace.data(), b.data(), w.data(), N, C, eps);
  EXPECT_TRUE(bitwise_equal(inplace, r));
}

// ---------------------------------------------------------------------------------------------
// RoPE

struct RopeCase {
  int B = 2, T = 11, NH = 4, NKV = 2, hd = 16;
  int heads() const { return NH + NKV; }
  int stride() const { return (NH + 2 * NKV) * hd; }
};

TEST(LlamaOps, RopeForwardRotatesQAndKOnly) {
  const RopeCase r;
  const RopeTable tab = rope_table(r.T, r.hd, 10000.0);
  const Vec x = randn(size_t(r.B) * r.T * r.stride(), 8);
  Vec y = x;
  cpu::rope_forward(y.data(), tab.cos.data(), tab.sin.data(), r.B, r.T, r.heads(), r.hd, r.stride());
  EXPECT_LE(rel_err(y, ref_rope(to_d(x), tab, r.B, r.T, r.heads(), r.hd, r.stride())), 1e-6);
  // Position 0 is the identity; v (past the q and k heads) is not touched.
  for (int b = 0; b < r.B; ++b)
    for (int t = 0; t < r.T; ++t) {
      const size_t row = (size_t(b) * r.T + t) * r.stride();
      for (int c = r.heads() * r.hd; c < r.stride(); ++c) ASSERT_EQ(y[row + c], x[row + c]) << "v touched";
      if (t == 0) {
        for (int c = 0; c < r.heads() * r.hd; ++c) ASSERT_EQ(y[row + c], x[row + c]) << "position 0 rotated";
      }
    }
  // Rotate-half pairs (i, i + hd/2): a vector with only x_0 = 1 at position t becomes
  // (cos θ_0 at 0, sin θ_0 at hd/2) — not the interleaved (0, 1) pair.
  Vec e(size_t(r.T) * r.hd, 0.f);
  for (int t = 0; t < r.T; ++t) e[size_t(t) * r.hd] = 1.f;
  cpu::rope_forward(e.data(), tab.cos.data(), tab.sin.data(), 1, r.T, 1, r.hd, r.hd);
  for (int t = 0; t < r.T; ++t) {
    EXPECT_FLOAT_EQ(e[size_t(t) * r.hd], float(std::cos(double(t))));
    EXPECT_FLOAT_EQ(e[size_t(t) * r.hd + r.hd / 2], float(std::sin(double(t))));
    EXPECT_EQ(e[size_t(t) * r.hd + 1], 0.f);
  }
}

TEST(LlamaOps, RopeBackwardUndoesForwardAndMatchesFiniteDifferences) {
  const RopeCase r;
  const RopeTable tab = rope_table(r.T, r.hd, 500000.0, {RopeScaling::Type::Llama3, 8, 1, 4, 16});
  const Vec x = randn(size_t(r.B) * r.T * r.stride(), 9);
  Vec y = x;
  cpu::rope_forward(y.data(), tab.cos.data(), tab.sin.data(), r.B, r.T, r.heads(), r.hd, r.stride());
  cpu::rope_backward(y.data(), tab.cos.data(), tab.sin.data(), r.B, r.T, r.heads(), r.hd, r.stride());
  EXPECT_LE(rel_err(y, x), 1e-6) << "R(-θ) R(θ) is not the identity";
  // The gradient of Σ rope(x)·g is rope_backward(g).
  const Vec g = randn(x.size(), 10);
  Vec dx = g;
  cpu::rope_backward(dx.data(), tab.cos.data(), tab.sin.data(), r.B, r.T, r.heads(), r.hd, r.stride());
  const DVec fd = finite_diff(
      [&](const DVec& v) { return dot(ref_rope(v, tab, r.B, r.T, r.heads(), r.hd, r.stride()), g); }, to_d(x));
  EXPECT_LE(rel_err(dx, fd), 1e-6);
}

TEST(LlamaOps, RopeRefusesOddHeadSizesAndHeadsPastTheRow) {
  Vec x(64), c(64), s(64);
  EXPECT_THROW(cpu::rope_forward(x.data(), c.data(), s.data(), 1, 1, 1, 3, 8), std::invalid_argument);
  EXPECT_THROW(cpu::rope_forward(x.data(), c.data(), s.data(), 1, 1, 3, 8, 16), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// The llama3 frequency rule, worked out by hand for hd = 16, theta = 10000, factor 8, low 1,
// high 4, L0 = 64: wavelengths 2π·10000^(2i/16) are 6.28, 19.87, 62.83, 198.7, ... against the
// thresholds L0/high = 16 and L0/low = 64: i = 0 is kept, i = 1 and 2 are interpolated, i >= 3
// are divided by 8.

TEST(LlamaOps, Llama3FrequenciesFollowTheFormula) {
  const int hd = 16;
  const RopeScaling sc{RopeScaling::Type::Llama3, 8.0, 1.0, 4.0, 64};
  const std::vector<float> plain = rope_inv_freq(hd, 10000.0), scaled = rope_inv_freq(hd, 10000.0, sc);
  ASSERT_EQ(scaled.size(), 8u);
  auto f = [&](int i) { return std::pow(10000.0, -2.0 * i / hd); };
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(plain[size_t(i)], f(i), 1e-6 * f(i)) << "default " << i;
  EXPECT_NEAR(scaled[0], f(0), 1e-7);                   // wavelength 6.28 < 16: high frequency, kept
  for (int i = 3; i < 8; ++i) EXPECT_NEAR(scaled[size_t(i)], f(i) / 8, 1e-6 * f(i)) << i;  // > 64: / factor
  for (int i : {1, 2}) {                                 // 16 <= wavelength <= 64: interpolated
    const double wl = 2 * M_PI / f(i), s = (64 / wl - 1) / (4 - 1);
    const double want = (1 - s) * f(i) / 8 + s * f(i);
    EXPECT_NEAR(scaled[size_t(i)], want, 1e-6 * f(i)) << i;
    EXPECT_GT(scaled[size_t(i)], f(i) / 8 * 1.01) << "interpolated, not divided";
    EXPECT_LT(scaled[size_t(i)], f(i) * 0.99) << "interpolated, not kept";
  }
  // i = 1: wl = 2π·10^0.5 = 19.869, s = (64/19.869 − 1)/3 = 0.74035; (1 − s)/8 + s = 0.77281.
  EXPECT_NEAR(scaled[1] / f(1), 0.77281, 1e-4);
  // The table: cos/sin of float(t)·inv_freq.
  const RopeTable tab = rope_table(5, hd, 10000.0, sc);
  EXPECT_EQ(tab.half, 8);
  for (int t = 0; t < 5; ++t)
    for (int i = 0; i < 8; ++i) {
      const float a = float(t) * scaled[size_t(i)];
      EXPECT_EQ(tab.cos[size_t(t) * 8 + i], float(std::cos(double(a))));
      EXPECT_EQ(tab.sin[size_t(t) * 8 + i], float(std::sin(double(a))));
    }
  EXPECT_THROW(rope_inv_freq(15, 10000.0), std::invalid_argument);
  EXPECT_THROW(rope_inv_freq(16, 10000.0, {RopeScaling::Type::Llama3, 8, 4, 1, 64}), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// SwiGLU

TEST(LlamaOps, SwigluForwardAndBackwardMatchFloat64) {
  const int N = 13, F = 45;
  Vec gu = randn(size_t(N) * 2 * F, 11, 3.f);
  gu[0] = -100.f, gu[1] = 100.f;  // saturated sigmoids
  Vec out(size_t(N) * F, kNaN);
  cpu::swiglu_forward(out.data(), gu.data(), N, F);
  EXPECT_LE(rel_err(out, ref_swiglu(to_d(gu), N, F)), 1e-6);
  const Vec g = randn(out.size(), 12), base = randn(gu.size(), 13);
  Vec dgu = base;
  cpu::swiglu_backward(dgu.data(), g.data(), gu.data(), N, F);
  for (size_t i = 0; i < dgu.size(); ++i) dgu[i] -= base[i];
  const DVec fd = finite_diff([&](const DVec& v) { return dot(ref_swiglu(v, N, F), g); }, to_d(gu));
  EXPECT_LE(rel_err(dgu, fd), 1e-5);
}

// ---------------------------------------------------------------------------------------------
// Grouped-query attention

struct GqaCase {
  int B, T, NH, NKV, hs;
  cpu::AttentionTiles tiles;
  int C() const { return NH * hs; }
  int W() const { return (NH + 2 * NKV) * hs; }
  std::string name() const {
    return "B=" + std::to_string(B) + " T=" + std::to_string(T) + " NH=" + std::to_string(NH) +
           " NKV=" + std::to_string(NKV) + " hs=" + std::to_string(hs) + " tiles " + std::to_string(tiles.q) + "x" +
           std::to_string(tiles.k);
  }
};

struct GqaRun {
  Vec out, saved, dqkv;
};

GqaRun run_gqa(const GqaCase& c, const Vec& qkv, const Vec& dout, float base = 0.f) {
  GqaRun r;
  r.out.assign(size_t(c.B) * c.T * c.C(), kNaN);
  r.saved.assign(cpu::attention_saved_bytes(c.B, c.T, c.C(), c.NH) / 4, kNaN);
  r.dqkv.assign(qkv.size(), base);
  cpu::attention_forward(r.out.data(), r.saved.data(), qkv.data(), c.B, c.T, c.C(), c.NH, c.NKV, c.tiles);
  cpu::attention_backward(r.dqkv.data(), dout.data(), qkv.data(), r.saved.data(), c.B, c.T, c.C(), c.NH, c.NKV,
                          c.tiles);
  return r;
}

TEST(LlamaOps, GqaMatchesFloat64AndFiniteDifferences) {
  for (const GqaCase& c : {GqaCase{2, 9, 4, 2, 4, {3, 4}}, GqaCase{1, 7, 6, 1, 8, {64, 64}},
                           GqaCase{1, 8, 6, 3, 2, {2, 2}}, GqaCase{1, 6, 2, 2, 4, {4, 3}}}) {
    SCOPED_TRACE(c.name());
    const Vec qkv = randn(size_t(c.B) * c.T * c.W(), uint32_t(14 + c.NKV)), dout = randn(size_t(c.B) * c.T * c.C(), 15);
    const float base = 0.5f;  // dqkv accumulates
    GqaRun r = run_gqa(c, qkv, dout, base);
    EXPECT_LE(rel_err(r.out, ref_gqa(to_d(qkv), c.B, c.T, c.NH, c.NKV, c.hs)), 1e-5);
    for (float& v : r.dqkv) v -= base;
    const DVec fd =
        finite_diff([&](const DVec& v) { return dot(ref_gqa(v, c.B, c.T, c.NH, c.NKV, c.hs), dout); }, to_d(qkv));
    EXPECT_LE(rel_err(r.dqkv, fd), 2e-5);
    // The K/V part of the gradient is the group's sum: a head group's dK must not be one head's.
    double kv_norm = 0;
    for (int t = 0; t < c.T; ++t)
      for (int i = c.C(); i < c.W(); ++i) kv_norm += std::abs(r.dqkv[size_t(t) * c.W() + i]);
    EXPECT_GT(kv_norm, 0);
  }
}

// The same attention with K/V replicated per query head (repeat_kv) through the multi-head path.
TEST(LlamaOps, GqaEqualsMultiHeadOverReplicatedKeysAndValues) {
  for (const GqaCase& c : {GqaCase{2, 70, 6, 2, 8, {16, 24}}, GqaCase{1, 130, 4, 1, 16, cpu::kAttentionTiles}}) {
    SCOPED_TRACE(c.name());
    const int G = c.NH / c.NKV, C = c.C(), rows = c.B * c.T;
    const Vec qkv = randn(size_t(rows) * c.W(), 16), dout = randn(size_t(rows) * C, 17);
    Vec rep(size_t(rows) * 3 * C);
    for (int r = 0; r < rows; ++r)
      for (int h = 0; h < c.NH; ++h)
        for (int i = 0; i < c.hs; ++i) {
          const float* src = &qkv[size_t(r) * c.W()];
          float* dst = &rep[size_t(r) * 3 * C];
          dst[h * c.hs + i] = src[h * c.hs + i];
          dst[C + h * c.hs + i] = src[C + (h / G) * c.hs + i];
          dst[2 * C + h * c.hs + i] = src[C + (c.NKV + h / G) * c.hs + i];
        }
    const GqaRun g = run_gqa(c, qkv, dout);
    const GqaRun m = run_gqa({c.B, c.T, c.NH, c.NH, c.hs, c.tiles}, rep, dout);
    EXPECT_TRUE(bitwise_equal(g.out, m.out)) << "forward: the same products in the same order";
    EXPECT_TRUE(bitwise_equal(g.saved, m.saved));
    // dQ: the same sums; dK, dV: the replicas' gradients summed over each group.
    Vec dq_g, dq_m, dkv_g, dkv_m;
    for (int r = 0; r < rows; ++r) {
      for (int j = 0; j < C; ++j) {
        dq_g.push_back(g.dqkv[size_t(r) * c.W() + j]);
        dq_m.push_back(m.dqkv[size_t(r) * 3 * C + j]);
      }
      for (int part = 0; part < 2; ++part)
        for (int kv = 0; kv < c.NKV; ++kv)
          for (int i = 0; i < c.hs; ++i) {
            dkv_g.push_back(g.dqkv[size_t(r) * c.W() + C + (part * c.NKV + kv) * c.hs + i]);
            float s = 0;
            for (int j = 0; j < G; ++j) s += m.dqkv[size_t(r) * 3 * C + (1 + part) * C + (kv * G + j) * c.hs + i];
            dkv_m.push_back(s);
          }
    }
    EXPECT_TRUE(bitwise_equal(dq_g, dq_m));
    EXPECT_LE(rel_err(dkv_g, dkv_m), 1e-6);
  }
}

TEST(LlamaOps, GqaWithAllHeadsIsTheMultiHeadPathBitForBit) {
  const int B = 2, T = 77, NH = 3, hs = 16, C = NH * hs;
  const Vec qkv = randn(size_t(B) * T * 3 * C, 18), dout = randn(size_t(B) * T * C, 19);
  Vec o1(dout.size()), o2(dout.size()), s1(cpu::attention_saved_bytes(B, T, C, NH) / 4), s2(s1.size());
  Vec d1(qkv.size(), 0.25f), d2 = d1;
  cpu::attention_forward(o1.data(), s1.data(), qkv.data(), B, T, C, NH);
  cpu::attention_backward(d1.data(), dout.data(), qkv.data(), s1.data(), B, T, C, NH);
  auto be = make_cpu_backend();
  be->attention_forward(o2.data(), s2.data(), qkv.data(), B, T, C, NH, NH);
  be->attention_backward(d2.data(), dout.data(), qkv.data(), s2.data(), B, T, C, NH, NH);
  EXPECT_TRUE(bitwise_equal(o1, o2));
  EXPECT_TRUE(bitwise_equal(s1, s2));
  EXPECT_TRUE(bitwise_equal(d1, d2));
}

TEST(LlamaOps, GqaResultsIndependentOfThreadCount) {
  const GqaCase c{2, 150, 6, 2, 16, cpu::kAttentionTiles};
  const Vec qkv = randn(size_t(c.B) * c.T * c.W(), 20), dout = randn(size_t(c.B) * c.T * c.C(), 21);
  const int before = cpu_threads();
  set_cpu_threads(1);
  const GqaRun one = run_gqa(c, qkv, dout);
  for (int threads : {2, 3}) {
    set_cpu_threads(threads);
    const GqaRun r = run_gqa(c, qkv, dout);
    EXPECT_TRUE(bitwise_equal(r.out, one.out)) << threads;
    EXPECT_TRUE(bitwise_equal(r.dqkv, one.dqkv)) << threads;
  }
  set_cpu_threads(before);
}

TEST(LlamaOps, GqaRefusesHeadCountsThatDoNotDivide) {
  Vec qkv(size_t(4) * 10 * 4), out(4 * 4 * 4), saved(cpu::attention_saved_bytes(1, 4, 16, 4) / 4);
  EXPECT_THROW(cpu::attention_forward(out.data(), saved.data(), qkv.data(), 1, 4, 16, 4, 3), std::invalid_argument);
  EXPECT_THROW(cpu::attention_backward(qkv.data(), out.data(), qkv.data(), saved.data(), 1, 4, 16, 4, 0),
               std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// The embedding without a position table (wpe and dwpe null): GPT-2's op with a zero table.

TEST(LlamaOps, EmbeddingWithoutPositionTable) {
  auto be = make_cpu_backend();
  const int B = 3, T = 7, C = 70, V = 11;  // tokens repeat
  const Vec wte = randn(size_t(V) * C, 34), zeros(size_t(T) * C, 0.f), dout = randn(size_t(B) * T * C, 35);
  std::vector<int32_t> tok(size_t(B) * T);
  for (size_t i = 0; i < tok.size(); ++i) tok[i] = int32_t((i * 7) % V);
  Vec out(dout.size(), kNaN), ref(dout.size());
  be->embedding_forward(out.data(), tok.data(), wte.data(), nullptr, B, T, C);
  be->embedding_forward(ref.data(), tok.data(), wte.data(), zeros.data(), B, T, C);
  EXPECT_TRUE(bitwise_equal(out, ref));
  for (size_t i = 0; i < tok.size(); ++i) ASSERT_EQ(std::memcmp(&out[i * C], &wte[size_t(tok[i]) * C], C * 4), 0);
  const Vec base = randn(wte.size(), 36);
  Vec dwte = base, dwte_ref = base, dwpe(zeros.size(), 0.f);
  be->embedding_backward(dwte.data(), nullptr, dout.data(), tok.data(), B, T, C);
  be->embedding_backward(dwte_ref.data(), dwpe.data(), dout.data(), tok.data(), B, T, C);
  EXPECT_TRUE(bitwise_equal(dwte, dwte_ref));
  EXPECT_FALSE(bitwise_equal(dwte, base));
}

// ---------------------------------------------------------------------------------------------
// SIMD variants

TEST(LlamaOps, EverySimdVariantAgreesWithScalar) {
  const int N = 45, C = 200, F = 133;
  const RopeCase r{2, 19, 4, 2, 64};
  const GqaCase a{1, 70, 4, 2, 32, cpu::kAttentionTiles};
  const Vec x = randn(size_t(N) * C, 22, 2.f), w = randn(C, 23), g = randn(x.size(), 24);
  const Vec gu = randn(size_t(N) * 2 * F, 25, 3.f), gs = randn(size_t(N) * F, 26);
  const Vec qk = randn(size_t(r.B) * r.T * r.stride(), 27);
  const RopeTable tab = rope_table(r.T, r.hd, 10000.0);
  const Vec qkv = randn(size_t(a.T) * a.W(), 28), dout = randn(size_t(a.T) * a.C(), 29);
  Vec rstd0(N);
  for (int n = 0; n < N; ++n) rstd0[size_t(n)] = 0.9f + 0.01f * float(n);
  struct Out {
    Vec rms, rstd, drms, dw, rope, drope, sw, dsw;
    GqaRun att;
  };
  auto run = [&] {
    Out o;
    o.rms.resize(x.size()), o.rstd.resize(N), o.drms.assign(x.size(), 0.f), o.dw.assign(C, 0.f);
    cpu::rmsnorm_forward(o.rms.data(), o.rstd.data(), x.data(), w.data(), N, C, 1e-5f);
    // The backward reads a fixed rstd (each variant's own differs in its last bits).
    cpu::rmsnorm_backward(o.drms.data(), o.dw.data(), g.data(), x.data(), w.data(), rstd0.data(), N, C);
    o.rope = qk;
    cpu::rope_forward(o.rope.data(), tab.cos.data(), tab.sin.data(), r.B, r.T, r.heads(), r.hd, r.stride());
    o.drope = qk;
    cpu::rope_backward(o.drope.data(), tab.cos.data(), tab.sin.data(), r.B, r.T, r.heads(), r.hd, r.stride());
    o.sw.resize(gs.size()), o.dsw.assign(gu.size(), 0.5f);
    cpu::swiglu_forward(o.sw.data(), gu.data(), N, F);
    cpu::swiglu_backward(o.dsw.data(), gs.data(), gu.data(), N, F);
    o.att = run_gqa(a, qkv, dout);
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
    // Elementwise ops: the same bits in every variant.
    EXPECT_TRUE(bitwise_equal(o.rope, ref.rope));
    EXPECT_TRUE(bitwise_equal(o.drope, ref.drope));
    EXPECT_TRUE(bitwise_equal(o.sw, ref.sw));
    EXPECT_TRUE(bitwise_equal(o.dsw, ref.dsw));
    EXPECT_TRUE(bitwise_equal(o.dw, ref.dw));  // over rows in order, per channel, from the same rstd
    // Row sums grouped by the vector width: equal to rounding.
    EXPECT_LE(rel_err(o.rms, ref.rms), 1e-6);
    EXPECT_LE(rel_err(o.rstd, ref.rstd), 1e-6);
    EXPECT_LE(rel_err(o.drms, ref.drms), 1e-5);
    EXPECT_LE(rel_err(o.att.out, ref.att.out), 1e-5);
    EXPECT_LE(rel_err(o.att.dqkv, ref.att.dqkv), 1e-5);
  });
}

// ---------------------------------------------------------------------------------------------
// The Backend entry points: the same results as the ops, and one record each with its cost.

TEST(LlamaOps, BackendEntryPointsRecordTheirCost) {
  auto be = make_cpu_backend();
  OpRecorder rec;
  be->attach_op_recorder(&rec);
  const int N = 6, C = 8, F = 5, B = 1, T = 6, NH = 2, NKV = 1, hd = 4;
  const Vec x = randn(size_t(N) * C, 30), w = randn(C, 31), gu = randn(size_t(N) * 2 * F, 32);
  Vec out(x.size()), rstd(N), dx(x.size(), 0.f), dw(C, 0.f), sw(size_t(N) * F), dgu(gu.size(), 0.f);
  be->rmsnorm_forward(out.data(), rstd.data(), x.data(), w.data(), N, C, 1e-6f);
  be->rmsnorm_backward(dx.data(), dw.data(), out.data(), x.data(), w.data(), rstd.data(), N, C);
  const RopeTable tab = rope_table(T, hd, 10000.0);
  Vec qkv = randn(size_t(B) * T * (NH + 2 * NKV) * hd, 33);
  be->rope_forward(qkv.data(), tab.cos.data(), tab.sin.data(), B, T, NH + NKV, hd, (NH + 2 * NKV) * hd);
  be->rope_backward(qkv.data(), tab.cos.data(), tab.sin.data(), B, T, NH + NKV, hd, (NH + 2 * NKV) * hd);
  be->swiglu_forward(sw.data(), gu.data(), N, F);
  be->swiglu_backward(dgu.data(), sw.data(), gu.data(), N, F);
  Vec att(size_t(B) * T * NH * hd), saved(be->attention_saved_bytes(B, T, NH * hd, NH) / 4), dqkv(qkv.size(), 0.f);
  be->attention_forward(att.data(), saved.data(), qkv.data(), B, T, NH * hd, NH, NKV);
  be->attention_backward(dqkv.data(), att.data(), qkv.data(), saved.data(), B, T, NH * hd, NH, NKV);
  Vec resid(x.size());
  be->residual_rmsnorm_forward(resid.data(), dx.data(), rstd.data(), x.data(), out.data(), w.data(), N, C, 1e-6f);
  be->attach_op_recorder(nullptr);
  Vec ref(x.size()), ref_rstd(N);
  cpu::rmsnorm_forward(ref.data(), ref_rstd.data(), x.data(), w.data(), N, C, 1e-6f);
  EXPECT_TRUE(bitwise_equal(out, ref));
  const auto& r = rec.records();
  ASSERT_EQ(r.size(), 10u);
  const OpKind want[] = {OpKind::RmsNormForward, OpKind::RmsNormBackward, OpKind::RopeForward, OpKind::RopeBackward,
                         OpKind::SwigluForward,  OpKind::SwigluBackward,  OpKind::AttentionForward,
                         OpKind::AttentionBackward};
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(r[i].cost.kind, want[i]) << i << " " << op_kind_name(r[i].cost.kind);
  EXPECT_DOUBLE_EQ(r[0].cost.flops, 4.0 * N * C);
  EXPECT_EQ(r[0].cost.params, C);
  EXPECT_DOUBLE_EQ(r[2].cost.flops, 3.0 * B * T * (NH + NKV) * hd);
  EXPECT_DOUBLE_EQ(r[4].cost.flops, 2.0 * N * F);
  EXPECT_TRUE(op_is_backward(r[1].cost.kind) && op_is_backward(r[3].cost.kind) && op_is_backward(r[5].cost.kind));
  EXPECT_FALSE(op_is_backward(r[0].cost.kind) || op_is_backward(r[2].cost.kind) || op_is_backward(r[4].cost.kind));
  // GQA costs what multi-head attention of the same query width costs; its shape names NKV.
  EXPECT_DOUBLE_EQ(r[6].cost.flops, attention_forward_flops(B, T, NH * hd));
  EXPECT_EQ(r[6].cost.shape, "B=1 T=6 C=8 NH=2 NKV=1");
  EXPECT_EQ(std::string(op_kind_name(OpKind::SwigluBackward)), "swiglu_backward");
  // The fused residual + RMSNorm: the add as a fused part, the norm carrying the time.
  EXPECT_EQ(r[8].cost.kind, OpKind::ResidualForward);
  EXPECT_TRUE(r[8].cost.fused);
  EXPECT_EQ(r[9].cost.kind, OpKind::RmsNormForward);
  EXPECT_FALSE(r[9].cost.fused);
}

}  // namespace
}  // namespace zt
