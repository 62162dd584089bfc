// The CPU backend's results must not depend on the thread count (OpenMP and OpenBLAS): a GPT-2
// forward+backward with 1, 2 and 3 threads gives bitwise-identical loss and gradients.
#include <gtest/gtest.h>

#include <cstring>

#include "kernels/backend.h"
#include "kernels/cpu/cpu_threads.h"
#include "runtime/model/gpt2.h"
#include "tests/model/model_test_util.h"

namespace zt {
namespace {

TEST(CpuDeterminism, GradientsBitwiseEqualAcrossThreadCounts) {
  // Width 160 spans several 64-channel reduction chunks; B·T = 144 rows repeat tokens often and
  // split the GEMMs into several tiles (matmul.cpp); test_tiled_attention.cpp covers attention blocks.
  ModelConfig cfg = *model_preset("tiny");
  cfg.dim = 160;
  cfg.heads = 4;
  cfg.seq_len = 24;
  cfg.vocab = 29;
  const int B = 6, T = 24;
  const int before = cpu_threads();
  std::vector<std::vector<float>> base;
  float base_loss = 0;
  for (int threads : {1, 2, 3}) {
    set_cpu_threads(threads);
    auto be = make_cpu_backend();
    GPT2 model(cfg, *be, ModelRunOptions{B, false});
    test::UnitBuffers buf(*be, model);
    test::fill_random_params(model, buf, 21);
    std::vector<int32_t> tokens, targets;
    test::random_batch(B, T, cfg.vocab, 22, tokens, targets);
    model.set_batch(tokens.data(), targets.data(), B, T);
    const float loss = forward_backward(model, buf.params, buf.grads);
    std::vector<std::vector<float>> grads;
    for (int u = 0; u < model.num_units(); ++u) grads.emplace_back(buf.g(u), buf.g(u) + model.layout(u).numel);
    if (base.empty()) {
      base = grads;
      base_loss = loss;
      continue;
    }
    EXPECT_EQ(std::memcmp(&loss, &base_loss, sizeof loss), 0) << threads << " threads";
    for (size_t u = 0; u < grads.size(); ++u)
      EXPECT_TRUE(grads[u] == base[u]) << "unit " << u << " differs with " << threads << " threads";
  }
  set_cpu_threads(before);
}

}  // namespace
}  // namespace zt
