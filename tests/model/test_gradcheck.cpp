// Finite-difference check of every parameter tensor's gradient on the tiny GPT-2 (tied and untied),
// plus activation checkpointing giving the same gradients bitwise.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kernels/backend.h"
#include "runtime/model/gpt2.h"
#include "tests/model/model_test_util.h"

namespace zt {
namespace {

// Step and tolerance, for fp32 (the CPU backend has no fp64 path):
// * The weights are O(0.3) and gradients O(1e-3..1e-1) (fill_random_params), so h = 1e-2 is a
//   small relative step.
// * Rounding: the loss (≈ 4.5) comes out of a few hundred fp32 operations per value; its error is
//   a few ulps of 4.5, i.e. ≲ 2e-6 absolute. Divided by 2h that is ≲ 1e-4 in the difference quotient.
// * Truncation of the central difference is h²/6 · |L'''| ≈ 2e-5 · |L'''|, with |L'''| = O(1) here.
// So |fd - analytic| ≤ 3e-4 + 3% · |analytic| accepts rounding and truncation, while a wrong
// factor, a missing term or a misplaced index (errors of order |analytic|) fails. Elements whose
// gradient is below the noise are still compared (then the absolute term decides); to be sure the
// check has teeth, each tensor must also have at least one sampled element with |g| > 10× atol.
constexpr float kStep = 1e-2f;
constexpr double kAtol = 3e-4, kRtol = 3e-2;
constexpr int kSamplesPerTensor = 10;

void gradcheck(ModelConfig cfg, bool checkpoint, int B, int T, uint32_t seed) {
  auto be = make_cpu_backend();
  GPT2 model(cfg, *be, ModelRunOptions{B, checkpoint});
  test::UnitBuffers buf(*be, model);
  test::fill_random_params(model, buf, seed);
  std::vector<int32_t> tokens, targets;
  test::random_batch(B, T, cfg.vocab, seed + 1, tokens, targets);
  targets[1] = -1;  // an ignored target on the way
  model.set_batch(tokens.data(), targets.data(), B, T);
  forward_backward(model, buf.params, buf.grads);

  std::mt19937 rng(seed + 2);
  for (int u = 0; u < model.num_units(); ++u)
    for (const auto& t : model.layout(u).tensors) {
      std::uniform_int_distribution<int64_t> pick(0, t.numel - 1);
      double largest = 0;
      for (int s = 0; s < kSamplesPerTensor; ++s) {
        const int64_t i = t.offset + pick(rng);
        float* w = buf.p(u) + i;
        const float saved = *w;
        *w = saved + kStep;
        const double lp = forward_only(model, buf.params);
        *w = saved - kStep;
        const double lm = forward_only(model, buf.params);
        *w = saved;
        const double fd = (lp - lm) / (2.0 * double(kStep));
        const double an = buf.g(u)[i];
        largest = std::max(largest, std::abs(an));
        EXPECT_NEAR(fd, an, kAtol + kRtol * std::abs(an))
            << model.layout(u).name << "." << t.name << "[" << (i - t.offset) << "]";
      }
      EXPECT_GT(largest, 10 * kAtol) << model.layout(u).name << "." << t.name
                                     << ": no sampled gradient above the noise, the check proves nothing";
    }
}

ModelConfig tiny() { return *model_preset("tiny"); }

TEST(GradCheck, TinyTied) { gradcheck(tiny(), false, 2, 8, 11); }

TEST(GradCheck, TinyUntiedOddT) {
  ModelConfig c = tiny();
  c.tied_embeddings = false;
  gradcheck(c, false, 2, 5, 12);
}

TEST(GradCheck, TinyCheckpointed) { gradcheck(tiny(), true, 1, 7, 13); }

// Recomputing a block in backward must give exactly the gradients of keeping its activations.
TEST(GradCheck, CheckpointingIsBitwiseIdentical) {
  auto be = make_cpu_backend();
  const ModelConfig cfg = tiny();
  std::vector<std::vector<float>> result[2];
  for (int ck = 0; ck < 2; ++ck) {
    GPT2 model(cfg, *be, ModelRunOptions{2, ck == 1});
    test::UnitBuffers buf(*be, model);
    test::fill_random_params(model, buf, 5);
    std::vector<int32_t> tokens, targets;
    test::random_batch(2, 8, cfg.vocab, 6, tokens, targets);
    model.set_batch(tokens.data(), targets.data(), 2, 8);
    forward_backward(model, buf.params, buf.grads);
    for (int u = 0; u < model.num_units(); ++u)
      result[ck].emplace_back(buf.g(u), buf.g(u) + model.layout(u).numel);
  }
  ASSERT_EQ(result[0].size(), result[1].size());
  for (size_t u = 0; u < result[0].size(); ++u) EXPECT_EQ(result[0][u], result[1][u]) << "unit " << u;
}

}  // namespace
}  // namespace zt
