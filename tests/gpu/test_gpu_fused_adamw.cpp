// The fused multi-tensor AdamW against base/adam_math.h on the host (bit for bit: the kernel builds
// with --fmad=false) and against an fp64 reference of the same formula: several chunks
// of odd sizes in one call (more than one launch's worth), fp32 / bf16 / fp16 grads, AdamW and
// L2 modes, and the bf16 working copy equal to the RNE of the updated master.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <random>

#include "base/adam_math.h"
#include "kernels/cuda/fused_adamw.h"
#include "tests/gpu/gpu_test_support.h"

namespace zt::test {
namespace {

void ref_step(double& p, double& m, double& v, double g, const AdamWHyper& h) {
  g *= h.grad_scale;
  if (!h.decoupled) g += h.weight_decay * p;
  m = h.beta1 * m + (1 - h.beta1) * g;
  v = h.beta2 * v + (1 - h.beta2) * g * g;
  const double bc1 = h.bias_correction ? 1 - std::pow((double)h.beta1, h.step) : 1;
  const double bc2 = h.bias_correction ? 1 - std::pow((double)h.beta2, h.step) : 1;
  double upd = (m / bc1) / (std::sqrt(v / bc2) + h.eps);
  if (h.decoupled) upd += h.weight_decay * p;
  p -= h.lr * upd;
}

void run_case(DType gdt, bool decoupled, bool bias_correction) {
  auto be = make_cuda_backend(0);
  std::mt19937 rng(2024);
  // 60 chunks (> 48 per launch) of sizes from 1 to ~10k, not multiples of the tile.
  std::vector<size_t> sizes;
  size_t total = 0;
  for (int i = 0; i < 60; ++i) {
    sizes.push_back(1 + (rng() % 9973));
    total += sizes.back();
  }
  auto p = random_bf16(total, rng), m = random_bf16(total, rng, -0.05f, 0.05f), v = random_bf16(total, rng, 1e-4f, 1e-2f);
  std::vector<double> pr(p.begin(), p.end()), mr(m.begin(), m.end()), vr(v.begin(), v.end());
  std::vector<float> pf(p), mf(m), vf(v);  // the host fp32 formula every path shares
  auto P = f32_from(*be, p), M = f32_from(*be, m), V = f32_from(*be, v);
  auto W = act_poisoned(*be, total);
  Buf G(*be, total * dtype_size(gdt));
  AdamWHyper h;
  h.lr = 3e-3f;
  h.weight_decay = 0.05f;
  h.decoupled = decoupled;
  h.bias_correction = bias_correction;
  h.grad_scale = 0.25f;
  for (int step = 1; step <= 3; ++step) {
    h.step = step;
    auto g = random_bf16(total, rng, -2, 2);  // bf16-exact, so every grad dtype holds it exactly... except fp16 range
    if (gdt == DType::F32) {
      be->copy_to_device(G.get(), g.data(), total * 4);
    } else if (gdt == DType::BF16) {
      be->f32_to_act(G.get(), g.data(), total);
    } else {
      std::vector<__half> hg(total);
      for (size_t i = 0; i < total; ++i) {
        hg[i] = __float2half_rn(g[i]);
        g[i] = __half2float(hg[i]);  // the reference uses what the kernel reads
      }
      be->copy_to_device(G.get(), hg.data(), total * 2);
    }
    std::vector<AdamWChunk> chunks;
    size_t off = 0;
    for (size_t n : sizes) {
      chunks.push_back({P->f32() + off, static_cast<char*>(G.get()) + off * dtype_size(gdt), M->f32() + off,
                        V->f32() + off, static_cast<char*>(W->get()) + off * 2, n});
      off += n;
    }
    fused_adamw(chunks.data(), chunks.size(), gdt, h, be->native_stream());
    for (size_t i = 0; i < total; ++i) ref_step(pr[i], mr[i], vr[i], g[i], h);
    const AdamScalars sc = adam_scalars(h);
    for (size_t i = 0; i < total; ++i) adam_update_element(pf[i], g[i], mf[i], vf[i], sc);
  }
  auto pg = f32_to_host(*be, *P, total), mg = f32_to_host(*be, *M, total), vg = f32_to_host(*be, *V, total);
  auto wg = act_to_host(*be, *W, total);
  const std::string tag = std::string(" grad ") + dtype_name(gdt) + (decoupled ? " adamw" : " l2") +
                          (bias_correction ? " bc" : " no-bc");
  // fp32 kernel vs fp64 reference over 3 steps: the update lr·m̂/(√v̂+ε) carries a few fp32 ulps
  // of relative error; relative to |p| ~ 1 that is ≤ 1e-6, so 2e-6 relative + 1e-7 absolute.
  EXPECT_TRUE(all_close(pg, pr, 2e-6, 1e-7, "master" + tag));
  EXPECT_TRUE(all_close(mg, mr, 2e-6, 1e-7, "m" + tag));
  EXPECT_TRUE(all_close(vg, vr, 2e-6, 1e-7, "v" + tag));
  size_t differ = 0;
  for (size_t i = 0; i < total; ++i) differ += pg[i] != pf[i] || mg[i] != mf[i] || vg[i] != vf[i];
  EXPECT_EQ(differ, 0u) << "the kernel must compute base/adam_math.h's bits" << tag;
  size_t bad = 0;
  for (size_t i = 0; i < total; ++i) bad += wg[i] != bf16_round(pg[i]);
  EXPECT_EQ(bad, 0u) << "bf16 working copy must be the RNE of the updated master" << tag;
}

TEST(GpuFusedAdamW, Fp32GradsAdamW) { run_case(DType::F32, true, true); }
TEST(GpuFusedAdamW, Bf16GradsAdamW) { run_case(DType::BF16, true, true); }
TEST(GpuFusedAdamW, Fp16GradsL2NoBiasCorrection) { run_case(DType::F16, false, false); }

TEST(GpuFusedAdamW, NullWorkingCopyAndEmptyChunks) {
  auto be = make_cuda_backend(0);
  std::mt19937 rng(5);
  const size_t n = 5000;
  auto p = random_bf16(n, rng), g = random_bf16(n, rng);
  std::vector<float> zeros(n, 0.0f);
  auto P = f32_from(*be, p), G = f32_from(*be, g), M = f32_from(*be, zeros), V = f32_from(*be, zeros);
  AdamWChunk chunks[3] = {{P->f32(), G->f32(), M->f32(), V->f32(), nullptr, 0},
                          {P->f32(), G->f32(), M->f32(), V->f32(), nullptr, n},
                          {P->f32(), G->f32(), M->f32(), V->f32(), nullptr, 0}};
  AdamWHyper h;
  fused_adamw(chunks, 3, DType::F32, h, be->native_stream());
  auto pg = f32_to_host(*be, *P, n);
  std::vector<double> pr(n);
  for (size_t i = 0; i < n; ++i) {
    double pp = p[i], m = 0, v = 0;
    ref_step(pp, m, v, g[i], h);
    pr[i] = pp;
  }
  EXPECT_TRUE(all_close(pg, pr, 2e-6, 1e-7, "single chunk, no working copy"));
}

}  // namespace
}  // namespace zt::test
