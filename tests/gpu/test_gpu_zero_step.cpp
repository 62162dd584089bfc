// The CUDA backend's ZeRO-step operations against the CPU backend on fresh random inputs: the
// sum of squares (deterministic: the same bits twice; within fp64 reassociation of the CPU's fixed
// order), scale (bf16 products rounded once), and adamw_multi_tensor (bit for bit with the host
// formula on the same bf16 gradients, the working copy the RNE of the master).
#include <cmath>
#include <random>

#include "base/adam_math.h"
#include "tests/gpu/gpu_test_support.h"

namespace zt::test {
namespace {

TEST(GpuZeroStep, SumSquaresMatchesTheCpuAndIsDeterministic) {
  auto gpu = make_cuda_backend(0);
  auto cpu = make_cpu_backend();
  std::mt19937 rng(11);
  for (size_t n : {size_t(1), size_t(4095), size_t(4097), size_t(1) << 20, size_t(3000001)}) {
    auto x = random_bf16(n, rng, -3, 3);  // bf16-exact values: both backends see the same numbers
    auto X = act_from(*gpu, x);
    const double a = gpu->sum_squares(X->get(), n, 0.5f), b = gpu->sum_squares(X->get(), n, 0.5f);
    EXPECT_EQ(a, b) << n;
    const double ref = cpu->sum_squares(x.data(), n, 0.5f);
    EXPECT_NEAR(a, ref, 1e-12 * ref) << n;
  }
}

TEST(GpuZeroStep, ScaleAndAdamWMultiTensor) {
  auto gpu = make_cuda_backend(0);
  std::mt19937 rng(12);
  const size_t n = 100003;
  auto x = random_bf16(n, rng, -2, 2);
  auto X = act_from(*gpu, x);
  gpu->scale(X->get(), 0.3f, n);
  auto got = act_to_host(*gpu, *X, n);
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) bad += got[i] != bf16_round(x[i] * 0.3f);
  EXPECT_EQ(bad, 0u);

  auto p = random_bf16(n, rng), g = random_bf16(n, rng, -1, 1);
  std::vector<float> zeros(n, 0.0f);
  auto P = f32_from(*gpu, p), M = f32_from(*gpu, zeros), V = f32_from(*gpu, zeros);
  auto G = act_from(*gpu, g);
  auto W = act_poisoned(*gpu, n);
  AdamWHyper h;
  h.lr = 1e-3f;
  h.weight_decay = 0.1f;
  AdamWChunk ch{P->f32(), G->get(), M->f32(), V->f32(), W->get(), n};
  gpu->adamw_multi_tensor(&ch, 1, DType::BF16, h);
  auto pg = f32_to_host(*gpu, *P, n);
  auto wg = act_to_host(*gpu, *W, n);
  std::vector<float> pr(p), mr(n, 0.0f), vr(n, 0.0f);
  const AdamScalars s = adam_scalars(h);
  for (size_t i = 0; i < n; ++i) adam_update_element(pr[i], g[i], mr[i], vr[i], s);
  size_t differ = 0, wrong_copy = 0;
  for (size_t i = 0; i < n; ++i) {
    differ += pg[i] != pr[i];
    wrong_copy += wg[i] != bf16_round(pg[i]);
  }
  EXPECT_EQ(differ, 0u);
  EXPECT_EQ(wrong_copy, 0u);
}

}  // namespace
}  // namespace zt::test
