// Compares the CPU GPT-2 with the PyTorch reference in tests/data/gpt2_tiny_reference.json (made by
// scripts/make_reference.py): same weights and inputs; logits, loss and every parameter gradient.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "kernels/backend.h"
#include "runtime/model/gpt2.h"
#include "tests/model/model_test_util.h"

namespace zt {
namespace {

// Tolerance. The reference is computed in float64 from float32 weights, so the difference is the
// C++ model's own fp32 rounding. Each value goes through at most ~10 chained ops, each with sums of
// up to 4C = 64 terms; the accumulated relative error is then a few hundred ulps at worst, i.e.
// ~1e-5 of the tensor's magnitude; measured (torch 1.13 reference, g++ 12, OpenBLAS 0.3.21) the
// worst tensor is at 4e-7 of its max|ref|. We accept |cpp - ref| ≤ 1e-5 · max|ref| over the tensor
// (plus 1e-7 for all-tiny tensors): 25× above the measurement, while any real error — a missing
// term, a transposed weight, a wrong scale — moves values by a sizeable fraction of max|ref|.
constexpr double kRel = 1e-5, kAbs = 1e-7;

std::vector<float> floats(const nlohmann::json& j) { return j.get<std::vector<float>>(); }

void expect_close(const std::vector<float>& got, const std::vector<float>& ref, const std::string& what) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  double scale = 0, worst = 0;
  for (float r : ref) scale = std::max(scale, double(std::abs(r)));
  for (size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::abs(double(got[i]) - double(ref[i])));
  EXPECT_LE(worst, kRel * scale + kAbs) << what << ": max error " << worst << " vs scale " << scale;
  EXPECT_GT(scale, 0.0) << what << " is all zeros in the reference: the comparison would prove nothing";
}

void run_case(const nlohmann::json& c) {
  SCOPED_TRACE(c["name"].get<std::string>());
  const auto& k = c["config"];
  ModelConfig cfg;
  cfg.vocab = k["vocab"];
  cfg.dim = k["dim"];
  cfg.seq_len = k["seq_len"];
  cfg.layers = k["layers"];
  cfg.heads = k["heads"];
  cfg.tied_embeddings = k["tied"];
  const int B = c["batch"], T = cfg.seq_len;
  auto be = make_cpu_backend();
  ModelRunOptions run;
  run.max_batch = B;
  run.keep_logits = true;
  GPT2 model(cfg, *be, run);
  test::UnitBuffers buf(*be, model);
  size_t loaded = 0;
  for (int u = 0; u < model.num_units(); ++u)
    for (const auto& t : model.layout(u).tensors) {
      const auto key = model.layout(u).name + "." + t.name;
      ASSERT_TRUE(c["params"].contains(key)) << key;
      const auto v = floats(c["params"][key]);
      ASSERT_EQ(int64_t(v.size()), t.numel) << key;
      std::copy(v.begin(), v.end(), buf.p(u) + t.offset);
      ++loaded;
    }
  ASSERT_EQ(loaded, c["params"].size()) << "the reference has tensors the model does not";
  const auto tokens = c["tokens"].get<std::vector<int32_t>>();
  const auto targets = c["targets"].get<std::vector<int32_t>>();
  model.set_batch(tokens.data(), targets.data(), B, T);
  const float loss = forward_backward(model, buf.params, buf.grads);

  const double ref_loss = c["loss"];
  EXPECT_NEAR(loss, ref_loss, 1e-5 * std::abs(ref_loss)) << "loss";
  // Logits rows are padded_vocab apart: the real columns match the reference, the padding is 0.
  const float* lg = static_cast<const float*>(model.logits());
  const int V = cfg.vocab, Vp = cfg.padded_vocab();
  std::vector<float> real;
  for (int r = 0; r < B * T; ++r) {
    real.insert(real.end(), lg + size_t(r) * Vp, lg + size_t(r) * Vp + V);
    for (int v = V; v < Vp; ++v) ASSERT_EQ(lg[size_t(r) * Vp + v], 0.f) << "padded logit row " << r << " col " << v;
  }
  expect_close(real, floats(c["logits"]), "logits");
  for (int u = 0; u < model.num_units(); ++u)
    for (const auto& t : model.layout(u).tensors) {
      const auto key = model.layout(u).name + "." + t.name;
      expect_close(std::vector<float>(buf.g(u) + t.offset, buf.g(u) + t.offset + t.numel),
                   floats(c["grads"][key]), "grad " + key);
    }
}

TEST(PyTorchReference, AllCases) {
  const std::string path = std::string(ZT_TEST_DATA_DIR) + "/gpt2_tiny_reference.json";
  std::ifstream f(path);
  ASSERT_TRUE(f) << "missing " << path << " (regenerate with scripts/make_reference.py)";
  const auto j = nlohmann::json::parse(f);
  ASSERT_GE(j["cases"].size(), 2u);
  for (const auto& c : j["cases"]) run_case(c);
}

}  // namespace
}  // namespace zt
