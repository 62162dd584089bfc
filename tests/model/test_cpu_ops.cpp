// CPU backend ops against float64 references: attention through the backend (T = 1, odd T),
// cross-entropy (vocab not a multiple of 8, ignored targets, dlogits overwritten), grads, AdamW.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernels/backend.h"
#include "tests/model/random_values.h"

namespace zt {
namespace {

using test::randn;

// float64 causal attention on qkv [B,T,3C] -> out [B,T,C].
std::vector<double> attention_ref(const std::vector<double>& qkv, int B, int T, int C, int NH) {
  const int hs = C / NH;
  std::vector<double> out(size_t(B) * T * C, 0.0);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T; ++t) {
        std::vector<double> s(size_t(t) + 1);
        double mx = -1e300;
        for (int u = 0; u <= t; ++u) {
          double d = 0;
          for (int i = 0; i < hs; ++i)
            d += qkv[(size_t(b) * T + t) * 3 * C + h * hs + i] * qkv[(size_t(b) * T + u) * 3 * C + C + h * hs + i];
          s[size_t(u)] = d / std::sqrt(double(hs));
          mx = std::max(mx, s[size_t(u)]);
        }
        double z = 0;
        for (auto& x : s) z += (x = std::exp(x - mx));
        for (int u = 0; u <= t; ++u)
          for (int i = 0; i < hs; ++i)
            out[(size_t(b) * T + t) * C + h * hs + i] +=
                s[size_t(u)] / z * qkv[(size_t(b) * T + u) * 3 * C + 2 * C + h * hs + i];
      }
  return out;
}

void check_attention(int B, int T, int C, int NH) {
  SCOPED_TRACE("B=" + std::to_string(B) + " T=" + std::to_string(T));
  auto be = make_cpu_backend();
  const size_t nqkv = size_t(B) * T * 3 * C, nout = size_t(B) * T * C;
  auto qkv = randn(nqkv, 1);
  auto dout = randn(nout, 2);
  std::vector<float> out(nout, std::numeric_limits<float>::quiet_NaN());
  std::vector<float> saved(be->attention_saved_bytes(B, T, C, NH) / 4);
  be->attention_forward(out.data(), saved.data(), qkv.data(), B, T, C, NH);
  std::vector<double> q64(qkv.begin(), qkv.end());
  const auto ref = attention_ref(q64, B, T, C, NH);
  for (size_t i = 0; i < nout; ++i) ASSERT_NEAR(out[i], ref[i], 1e-5) << "out " << i;

  // Backward: gradient of Σ out·dout, compared with float64 central differences of the reference.
  std::vector<float> dqkv(nqkv, 0.5f);  // accumulates onto what is there
  be->attention_backward(dqkv.data(), dout.data(), qkv.data(), saved.data(), B, T, C, NH);
  for (size_t i = 0; i < nqkv; ++i) {
    auto f = [&](double x) {
      auto p = q64;
      p[i] = x;
      const auto o = attention_ref(p, B, T, C, NH);
      double s = 0;
      for (size_t k = 0; k < nout; ++k) s += o[k] * dout[k];
      return s;
    };
    const double h = 1e-5, fd = (f(q64[i] + h) - f(q64[i] - h)) / (2 * h);
    ASSERT_NEAR(dqkv[i] - 0.5f, fd, 2e-4) << "dqkv " << i;
  }
}

TEST(CpuAttention, SingleTokenIsIdentityOnV) {
  // T = 1: the only key is itself, so out = v, dq = dk = 0, dv = dout. dq and dk are P·(dP - D) with
  // D = rowsum(dO∘O) and dP = dO·v summed in another order (tiled backward), so they are zero only up
  // to the rounding of a C/NH-term dot product.
  auto be = make_cpu_backend();
  const int B = 3, T = 1, C = 8, NH = 2;
  auto qkv = randn(size_t(B) * 3 * C, 3);
  auto dout = randn(size_t(B) * C, 4);
  std::vector<float> out(size_t(B) * C), saved(be->attention_saved_bytes(B, T, C, NH) / 4);
  std::vector<float> dqkv(qkv.size(), 0.f);
  be->attention_forward(out.data(), saved.data(), qkv.data(), B, T, C, NH);
  be->attention_backward(dqkv.data(), dout.data(), qkv.data(), saved.data(), B, T, C, NH);
  for (int b = 0; b < B; ++b)
    for (int c = 0; c < C; ++c) {
      EXPECT_FLOAT_EQ(out[size_t(b) * C + c], qkv[size_t(b) * 3 * C + 2 * C + c]);
      EXPECT_NEAR(dqkv[size_t(b) * 3 * C + c], 0.f, 1e-6);
      EXPECT_NEAR(dqkv[size_t(b) * 3 * C + C + c], 0.f, 1e-6);
      EXPECT_FLOAT_EQ(dqkv[size_t(b) * 3 * C + 2 * C + c], dout[size_t(b) * C + c]);
    }
  check_attention(2, 1, 8, 2);
}

TEST(CpuAttention, OddSequenceLength) { check_attention(2, 7, 12, 3); }

TEST(CpuCrossEntropy, PaddedVocabIgnoredTargetsInPlaceOrNot) {
  // V not a multiple of 8; rows Vp apart with the padding poisoned (NaN): it must never be read,
  // and its gradient must come out 0. In place (dlogits == logits) must give the same bits.
  auto be = make_cpu_backend();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (auto [V, Vp] : {std::pair{13, 13}, {13, 16}, {61, 128}}) {
    SCOPED_TRACE("V=" + std::to_string(V) + " Vp=" + std::to_string(Vp));
    const int N = 6;
    auto real = randn(size_t(N) * V, 5, 3.f);
    std::vector<float> logits(size_t(N) * Vp, nan);
    for (int n = 0; n < N; ++n) std::copy_n(real.begin() + n * V, V, logits.begin() + size_t(n) * Vp);
    std::vector<int32_t> targets = {0, V - 1, -1, 5, -7, 2};
    std::vector<float> losses(N, -1.f), dl(size_t(N) * Vp, nan);
    const float dloss = 0.25f;
    be->crossentropy_forward_backward(losses.data(), dl.data(), logits.data(), targets.data(), N, V, Vp, dloss);
    const int valid = 4;
    for (int n = 0; n < N; ++n) {
      for (int v = V; v < Vp; ++v) EXPECT_EQ(dl[size_t(n) * Vp + v], 0.f) << "padded column " << v;
      if (targets[size_t(n)] < 0) {
        EXPECT_EQ(losses[size_t(n)], 0.f);
        for (int v = 0; v < V; ++v) EXPECT_EQ(dl[size_t(n) * Vp + v], 0.f);  // overwritten, NaN gone
        continue;
      }
      const float* x = real.data() + size_t(n) * V;
      double mx = -1e300, z = 0;
      for (int v = 0; v < V; ++v) mx = std::max(mx, double(x[v]));
      for (int v = 0; v < V; ++v) z += std::exp(double(x[v]) - mx);
      const int t = targets[size_t(n)];
      EXPECT_NEAR(losses[size_t(n)], std::log(z) + mx - x[t], 1e-5);
      for (int v = 0; v < V; ++v) {
        const double p = std::exp(double(x[v]) - mx) / z;
        EXPECT_NEAR(dl[size_t(n) * Vp + v], (p - (v == t)) * dloss / valid, 1e-7);
      }
    }
    std::vector<float> losses2(N, -1.f);
    be->crossentropy_forward_backward(losses2.data(), logits.data(), logits.data(), targets.data(), N, V, Vp, dloss);
    EXPECT_EQ(std::memcmp(losses2.data(), losses.data(), N * 4), 0) << "in-place losses differ";
    EXPECT_EQ(std::memcmp(logits.data(), dl.data(), dl.size() * 4), 0) << "in-place gradient differs";
  }
}

TEST(CpuMatmul, ForwardAndAccumulatingBackward) {
  auto be = make_cpu_backend();
  const int N = 5, IC = 7, OC = 9;
  auto x = randn(size_t(N) * IC, 6), w = randn(size_t(OC) * IC, 7), b = randn(OC, 8), g = randn(size_t(N) * OC, 9);
  std::vector<float> out(size_t(N) * OC);
  be->matmul_forward(out.data(), x.data(), w.data(), b.data(), N, IC, OC);
  std::vector<float> dx(x.size(), 0.f), dw(w.size(), 0.f), db(OC, 0.f);
  for (int rep = 0; rep < 2; ++rep) be->matmul_backward(dx.data(), dw.data(), db.data(), g.data(), x.data(), w.data(), N, IC, OC);
  for (int n = 0; n < N; ++n)
    for (int o = 0; o < OC; ++o) {
      double s = b[size_t(o)];
      for (int i = 0; i < IC; ++i) s += double(x[size_t(n) * IC + i]) * w[size_t(o) * IC + i];
      EXPECT_NEAR(out[size_t(n) * OC + o], s, 1e-5);
    }
  for (int n = 0; n < N; ++n)
    for (int i = 0; i < IC; ++i) {
      double s = 0;
      for (int o = 0; o < OC; ++o) s += double(g[size_t(n) * OC + o]) * w[size_t(o) * IC + i];
      EXPECT_NEAR(dx[size_t(n) * IC + i], 2 * s, 1e-5);
    }
  for (int o = 0; o < OC; ++o) {
    double sb = 0;
    for (int n = 0; n < N; ++n) sb += g[size_t(n) * OC + o];
    EXPECT_NEAR(db[size_t(o)], 2 * sb, 1e-5);
    for (int i = 0; i < IC; ++i) {
      double s = 0;
      for (int n = 0; n < N; ++n) s += double(g[size_t(n) * OC + o]) * x[size_t(n) * IC + i];
      EXPECT_NEAR(dw[size_t(o) * IC + i], 2 * s, 1e-5);
    }
  }
}

TEST(CpuAdamW, MatchesTheFormulaInDouble) {
  auto be = make_cpu_backend();
  const size_t n = 37;
  auto p = randn(n, 10), g = randn(n, 11), m = randn(n, 12, 0.1f), v = randn(n, 13, 0.1f);
  for (auto& x : v) x = x * x;
  AdamWHyper h;
  h.lr = 1e-2f;
  h.weight_decay = 0.1f;
  h.step = 3;
  h.grad_scale = 0.5f;
  auto p2 = p, m2 = m, v2 = v;
  be->adamw_step(p2.data(), g.data(), m2.data(), v2.data(), n, h);
  for (size_t i = 0; i < n; ++i) {
    const double gr = double(g[i]) * 0.5;
    const double mi = 0.9 * m[i] + 0.1 * gr, vi = 0.999 * v[i] + 0.001 * gr * gr;
    const double mh = mi / (1 - std::pow(0.9, 3)), vh = vi / (1 - std::pow(0.999, 3));
    const double pe = double(p[i]) * (1 - 1e-2 * 0.1) - 1e-2 * mh / (std::sqrt(vh) + 1e-8);
    EXPECT_NEAR(m2[i], mi, 1e-6);
    EXPECT_NEAR(v2[i], vi, 1e-6);
    EXPECT_NEAR(p2[i], pe, 1e-5);
  }
}

}  // namespace
}  // namespace zt
