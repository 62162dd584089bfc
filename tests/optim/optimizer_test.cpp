// Adam, AdamW, Adam with L2 (adam_w_mode false), and SGD (plain, momentum, dampening + decay,
// Nesterov) on tiny vectors against values worked out in double from the textbook formulas.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "optim/adam.h"
#include "optim/sgd.h"

namespace zt {
namespace {

void expect_close(const std::vector<float>& got, const std::vector<double>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 2e-6 * std::abs(want[i]) + 1e-9) << what << " element " << i;
}

struct AdamCase {
  float wd;
  bool decoupled;
  std::vector<double> after1, after2;
};

std::vector<float> run_adam(const AdamCase& c, int steps) {
  std::vector<float> p = {1.0f, -2.0f, 0.5f}, m(3, 0.0f), v(3, 0.0f);
  const std::vector<std::vector<float>> grads = {{0.1f, -0.2f, 0.3f}, {0.2f, 0.1f, -0.1f}};
  AdamWHyper h;
  h.lr = 0.01f;
  h.weight_decay = c.wd;
  h.decoupled = c.decoupled;
  for (int t = 1; t <= steps; ++t) {
    h.step = t;
    adam_step(p, grads[t - 1], m, v, h);
  }
  return p;
}

// p_t = p - lr*wd*p (AdamW) then p -= lr * m_hat / (sqrt(v_hat) + eps); L2: g += wd * p.
TEST(Adam, AdamWAdamL2AndNoDecayAgainstHandValues) {
  const std::vector<AdamCase> cases = {
      {0.1f, true, {0.9890000009999999, -1.9880000005, 0.4895000003333333},
       {0.9783591813511252, -1.9833486302713677, 0.48500831479247475}},
      {0.1f, false, {0.9900000004999999, -1.99000000025, 0.4900000002857143},
       {0.9800897048601187, -1.9817072219547431, 0.4844430174967703}},
      {0.0f, true, {0.9900000009999999, -1.9900000005, 0.4900000003333333},
       {0.9803481813521252, -1.9873366302718676, 0.48599781479280807}},
  };
  for (const auto& c : cases) {
    expect_close(run_adam(c, 1), c.after1, c.decoupled ? "adamw step 1" : "adam-l2 step 1");
    expect_close(run_adam(c, 2), c.after2, c.decoupled ? "adamw step 2" : "adam-l2 step 2");
  }
}

TEST(Adam, ModesAgreeBitwiseWithoutWeightDecayAndTypeMapping) {
  const auto a = run_adam({0.0f, true, {}, {}}, 2);
  const auto b = run_adam({0.0f, false, {}, {}}, 2);
  EXPECT_EQ(a, b);
  EXPECT_TRUE(adam_decoupled("AdamW", false));  // AdamW is always decoupled
  EXPECT_TRUE(adam_decoupled("Adam", true));    // "Adam" means AdamW by default
  EXPECT_FALSE(adam_decoupled("Adam", false));  // adam_w_mode: false -> L2
}

TEST(Adam, SplittingTheSpanChangesNothingAndGradScaleIsFolded) {
  std::vector<float> p(37), g(37), m(37, 0.0f), v(37, 0.0f);
  for (int i = 0; i < 37; ++i) {
    p[i] = 0.1f * static_cast<float>(i) - 1.7f;
    g[i] = 0.03f * static_cast<float>((i * 7) % 11) - 0.15f;
  }
  auto p2 = p, m2 = m, v2 = v;
  std::vector<float> g4(37);
  for (int i = 0; i < 37; ++i) g4[i] = g[i] * 4.0f;  // exact: power of two
  AdamWHyper h;
  h.weight_decay = 0.05f;
  adam_step(p, g, m, v, h);
  h.grad_scale = 0.25f;  // unscale folded into the step
  std::span<float> sp(p2), sm(m2), sv(v2);
  std::span<const float> sg(g4);
  adam_step(sp.first(20), sg.first(20), sm.first(20), sv.first(20), h);
  adam_step(sp.subspan(20), sg.subspan(20), sm.subspan(20), sv.subspan(20), h);
  EXPECT_EQ(p, p2);
  EXPECT_EQ(m, m2);
  EXPECT_EQ(v, v2);
}

TEST(Adam, RejectsBadInput) {
  std::vector<float> p(3), g(2), m(3), v(3);
  EXPECT_THROW(adam_step(p, g, m, v, AdamWHyper{}), std::invalid_argument);
  std::vector<float> g3(3);
  AdamWHyper h;
  h.step = 0;
  EXPECT_THROW(adam_step(p, g3, m, v, h), std::invalid_argument);
}

std::vector<float> run_sgd(SgdHyper h, int steps) {
  std::vector<float> p = {1.0f, -2.0f}, buf(2, 0.0f);
  const std::vector<std::vector<float>> grads = {{0.5f, -1.0f}, {0.25f, 0.5f}, {-0.5f, 0.75f}};
  for (int t = 1; t <= steps; ++t) {
    h.step = t;
    sgd_step(p, grads[t - 1], h.momentum != 0.0f ? std::span<float>(buf) : std::span<float>(), h);
  }
  return p;
}

// PyTorch: g += wd*p; buf = g (step 1) else momentum*buf + (1-dampening)*g; g = nesterov ? g + momentum*buf : buf.
TEST(Sgd, PlainMomentumDampeningNesterovAgainstHandValues) {
  SgdHyper plain;
  plain.lr = 0.1f;
  expect_close(run_sgd(plain, 3), {0.975, -2.025}, "plain");
  SgdHyper mom = plain;
  mom.momentum = 0.9f;
  expect_close(run_sgd(mom, 1), {0.95, -1.9}, "momentum step 1");
  expect_close(run_sgd(mom, 2), {0.88, -1.86}, "momentum step 2");
  expect_close(run_sgd(mom, 3), {0.867, -1.899}, "momentum step 3");
  SgdHyper damp = mom;
  damp.dampening = 0.5f;
  damp.weight_decay = 0.01f;
  expect_close(run_sgd(damp, 3), {0.8616933872499999, -1.8058617744999999}, "dampening + weight decay");
  SgdHyper nest = mom;
  nest.nesterov = true;
  expect_close(run_sgd(nest, 1), {0.905, -1.81}, "nesterov step 1");
  expect_close(run_sgd(nest, 3), {0.8553, -1.9341}, "nesterov step 3");
}

TEST(Sgd, RejectsNesterovWithoutMomentumAndMissingBuffer) {
  SgdHyper h;
  h.nesterov = true;
  std::vector<float> p(2), g(2), buf(2);
  EXPECT_THROW(sgd_step(p, g, buf, h), std::invalid_argument);
  h.nesterov = false;
  h.momentum = 0.9f;
  EXPECT_THROW(sgd_step(p, g, {}, h), std::invalid_argument);
}

}  // namespace
}  // namespace zt
