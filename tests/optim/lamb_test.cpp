// Lamb against hand-computed values (per-tensor trust ratio unclamped, clamped to max_coeff and
// min_coeff, and 1 for a zero tensor), and the two-phase API across two "shards" against one shard.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "optim/lamb.h"

namespace zt {
namespace {

LambHyper hyper() {
  LambHyper h;
  h.lr = 0.01f;
  h.eps = 1e-6f;
  h.weight_decay = 0.01f;
  return h;
}

// Tensors: [0,3) moderate, [3,5) large weights (ratio clamps to 10), [5,7) tiny weights (clamps to
// 0.01), [7,9) zero weights (ratio 1 on step 1).
const std::vector<LambPiece> kPieces = {{0, 3, 0}, {3, 2, 1}, {5, 2, 2}, {7, 2, 3}};
const std::vector<float> kP0 = {1.0f, -2.0f, 0.5f, 30.0f, -40.0f, 0.001f, 0.002f, 0.0f, 0.0f};
const std::vector<std::vector<float>> kG = {{0.1f, -0.2f, 0.3f, 0.5f, 0.5f, 1.0f, -1.0f, 0.3f, 0.4f},
                                            {0.2f, 0.1f, -0.1f, -0.5f, 0.25f, 0.5f, 0.5f, -0.3f, 0.1f}};

// Worked out in double from the fp32-rounded inputs (betas, eps, lr, p, g): m, v as Adam (no bias correction inside), u = m / (sqrt(v) + eps) + wd*p,
// ratio = clamp(||p|| / ||u||, 0.01, 10) per tensor, p -= lr*sqrt(1-b2^t)/(1-b1^t) * ratio * u.
TEST(Lamb, TwoStepsAgainstHandValues) {
  auto p = kP0;
  std::vector<float> m(p.size(), 0.0f), v(p.size(), 0.0f);
  LambHyper h = hyper();
  h.step = 1;
  auto r1 = lamb_step(p, kG[0], m, v, kPieces, h);
  EXPECT_NEAR(r1[0], 0.41686900222588796, 1e-7);
  EXPECT_EQ(r1[1], 10.0f);
  EXPECT_EQ(r1[2], 0.01f);
  EXPECT_EQ(r1[3], 1.0f);
  const std::vector<double> want1 = {0.9958194454514057,    -1.995805604165226,    0.4958251582125469,
                                     29.890519557206282,    -40.08734464793588,    0.0009000028979400203,
                                     0.0020999962958753874, -0.009998945788312542, -0.009999209264505666};
  for (size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(p[i], want1[i], 1e-6 * std::abs(want1[i]) + 1e-10) << i;
  h.step = 2;
  auto r2 = lamb_step(p, kG[1], m, v, kPieces, h);
  EXPECT_NEAR(r2[0], 0.49700017281144576, 1e-7);
  EXPECT_EQ(r2[3], 0.01f);
  const std::vector<double> want2 = {0.9910115212860188,    -1.9944587546810821,   0.4938304715142708,
                                     29.888748788857168,    -40.17112417466233,    0.0008067873646393953,
                                     0.0021266287495852305, -0.00999368066879293,  -0.010082260287335101};
  for (size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(p[i], want2[i], 1e-6 * std::abs(want2[i]) + 1e-10) << i;
}

TEST(Lamb, TrustRatioEdgeCases) {
  const LambHyper h = hyper();
  EXPECT_EQ(lamb_trust_ratio(0.0, 4.0, h), 1.0f);
  EXPECT_EQ(lamb_trust_ratio(4.0, 0.0, h), 1.0f);
  EXPECT_EQ(lamb_trust_ratio(4.0, 1.0, h), 2.0f);
  EXPECT_EQ(lamb_trust_ratio(1e6, 1.0, h), 10.0f);
  EXPECT_EQ(lamb_trust_ratio(1e-8, 1.0, h), 0.01f);
}

// The same 3 tensors laid out flat, split between two "ranks" so that tensor 1 straddles the cut:
// rank 0 holds [0, 5), rank 1 holds [5, 11). Each rank runs phase 1 on its pieces, the partials are
// summed per tensor (what the engine's all-reduce does), and phase 2 applies the ratios.
TEST(Lamb, TwoShardsEqualOneShard) {
  const size_t n = 11;
  std::vector<float> p(n), g1(n), g2(n);
  for (size_t i = 0; i < n; ++i) {
    p[i] = 0.37f * static_cast<float>(i) - 1.3f;
    g1[i] = 0.05f * static_cast<float>((i * 5) % 7) - 0.12f;
    g2[i] = 0.04f * static_cast<float>((i * 3) % 5) - 0.07f;
  }
  const std::vector<LambPiece> whole = {{0, 3, 0}, {3, 6, 1}, {9, 2, 2}};
  auto pw = p;
  std::vector<float> mw(n, 0.0f), vw(n, 0.0f);

  const size_t cut = 5;
  const std::vector<LambPiece> shard0 = {{0, 3, 0}, {3, 2, 1}};
  const std::vector<LambPiece> shard1 = {{0, 4, 1}, {4, 2, 2}};
  std::vector<float> ps = p, ms(n, 0.0f), vs(n, 0.0f);
  std::span<float> sp(ps), sm(ms), sv(vs);

  LambHyper h = hyper();
  for (int step = 1; step <= 2; ++step) {
    h.step = step;
    const auto& g = step == 1 ? g1 : g2;
    lamb_step(pw, g, mw, vw, whole, h);

    std::span<const float> sg(g);
    std::vector<LambPartial> part0(shard0.size()), part1(shard1.size());
    lamb_phase1(sp.first(cut), sg.first(cut), sm.first(cut), sv.first(cut), shard0, h, part0);
    lamb_phase1(sp.subspan(cut), sg.subspan(cut), sm.subspan(cut), sv.subspan(cut), shard1, h, part1);
    std::map<int64_t, LambPartial> sum;  // the "all-reduce"
    for (size_t k = 0; k < shard0.size(); ++k) {
      sum[shard0[k].tensor].w_sq += part0[k].w_sq;
      sum[shard0[k].tensor].u_sq += part0[k].u_sq;
    }
    for (size_t k = 0; k < shard1.size(); ++k) {
      sum[shard1[k].tensor].w_sq += part1[k].w_sq;
      sum[shard1[k].tensor].u_sq += part1[k].u_sq;
    }
    std::vector<float> r0, r1;
    for (const auto& pc : shard0) r0.push_back(lamb_trust_ratio(sum[pc.tensor].w_sq, sum[pc.tensor].u_sq, h));
    for (const auto& pc : shard1) r1.push_back(lamb_trust_ratio(sum[pc.tensor].w_sq, sum[pc.tensor].u_sq, h));
    EXPECT_EQ(r0[1], r1[0]) << "tensor 1 must get one ratio on both ranks";
    EXPECT_NE(r0[0], r0[1]) << "the test needs distinct per-tensor ratios";
    lamb_phase2(sp.first(cut), sm.first(cut), sv.first(cut), shard0, h, r0);
    lamb_phase2(sp.subspan(cut), sm.subspan(cut), sv.subspan(cut), shard1, h, r1);
    EXPECT_EQ(ps, pw) << "step " << step;
    EXPECT_EQ(ms, mw);
    EXPECT_EQ(vs, vw);
  }
}

TEST(Lamb, PaddingOutsidePiecesIsUntouched) {
  std::vector<float> p = {1.0f, 2.0f, 7.0f, 7.0f}, g = {0.5f, 0.5f, 9.0f, 9.0f}, m(4, 0.0f), v(4, 0.0f);
  const std::vector<LambPiece> pieces = {{0, 2, 0}};
  lamb_step(p, g, m, v, pieces, hyper());
  EXPECT_EQ(p[2], 7.0f);
  EXPECT_EQ(m[3], 0.0f);
  EXPECT_NE(p[0], 1.0f);
  const std::vector<LambPiece> bad = {{3, 2, 0}};
  EXPECT_THROW(lamb_step(p, g, m, v, bad, hyper()), std::invalid_argument);
}

}  // namespace
}  // namespace zt
