// Llama's CUDA ops (RMSNorm, RoPE, SwiGLU, grouped-query attention on the flash and the reference
// kernels, the embedding without a position table) against the CPU backend (fp32) on identical bf16-representable inputs with
// NaN-poisoned outputs.
//
// Tolerance. Each output is one bf16 rounding of an fp32 result (u = 2⁻⁸ relative), except where
// the op accumulates into a bf16 buffer that already holds a value (gradients: the old value plus
// the new term, rounded once) — still one rounding of the sum. RMSNorm's statistic rstd stays fp32
// (1e-5). Attention takes test_gpu_attention.cpp's allowance (P and dS rounded to bf16 as
// tensor-core operands): |got − ref| ≤ |ref|/128 + max|ref|/64.
#include <cmath>
#include <cstdlib>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/rope_table.h"
#include "tests/gpu/gpu_test_support.h"

namespace zt::test {
namespace {

constexpr double kRtol = 1.0 / 256, kAtol = 1.0 / 1024;
constexpr double kAttRel = 1.0 / 128, kAttAtol = 1.0 / 64;

class GpuLlamaOps : public ::testing::Test {
 protected:
  void SetUp() override {
    gpu = make_cuda_backend(0);
    cpu = make_cpu_backend();
  }
  std::unique_ptr<Backend> gpu, cpu;
  std::mt19937 rng{2024};
};

TEST_F(GpuLlamaOps, RmsNormForwardBackward) {
  const int N = 37, C = 576;
  const auto x = random_bf16(size_t(N) * C, rng, -2.f, 2.f), w = random_bf16(C, rng), g = random_bf16(x.size(), rng);
  const auto dx0 = random_bf16(x.size(), rng), dw0 = random_bf16(C, rng);
  // CPU reference.
  std::vector<float> out(x.size()), rstd(N), dx = dx0, dw = dw0;
  cpu->rmsnorm_forward(out.data(), rstd.data(), x.data(), w.data(), N, C, 1e-5f);
  cpu->rmsnorm_backward(dx.data(), dw.data(), g.data(), x.data(), w.data(), rstd.data(), N, C);
  auto X = act_from(*gpu, x), W = act_from(*gpu, w), Gd = act_from(*gpu, g), O = act_poisoned(*gpu, x.size());
  auto R = f32_poisoned(*gpu, N), DX = act_from(*gpu, dx0), DW = act_from(*gpu, dw0);
  gpu->rmsnorm_forward(O->get(), R->f32(), X->get(), W->get(), N, C, 1e-5f);
  gpu->rmsnorm_backward(DX->get(), DW->get(), Gd->get(), X->get(), W->get(), R->f32(), N, C);
  EXPECT_TRUE(all_close(act_to_host(*gpu, *O, x.size()), out, kRtol, kAtol, "rmsnorm out"));
  EXPECT_TRUE(all_close(f32_to_host(*gpu, *R, N), rstd, 1e-5, 1e-6, "rmsnorm rstd"));
  EXPECT_TRUE(all_close(act_to_host(*gpu, *DX, x.size()), dx, kRtol, kAtol, "rmsnorm dinp"));
  EXPECT_TRUE(all_close(act_to_host(*gpu, *DW, C), dw, kRtol, kAtol, "rmsnorm dw"));
}

// resid is one rounding of a + b; out is compared with the CPU's RMSNorm of the GPU's rounded resid
// (the GPU normalises what it stored), so one rounding remains there too.
TEST_F(GpuLlamaOps, ResidualRmsNorm) {
  const int N = 21, C = 576;
  const auto a = random_bf16(size_t(N) * C, rng), b = random_bf16(a.size(), rng), w = random_bf16(C, rng);
  std::vector<float> r(a.size());
  cpu->residual_forward(r.data(), a.data(), b.data(), a.size());
  auto A = act_from(*gpu, a), Bb = act_from(*gpu, b), W = act_from(*gpu, w), R = act_poisoned(*gpu, a.size());
  auto O = act_poisoned(*gpu, a.size()), S = f32_poisoned(*gpu, N);
  gpu->residual_rmsnorm_forward(R->get(), O->get(), S->f32(), A->get(), Bb->get(), W->get(), N, C, 1e-5f);
  const auto gr = act_to_host(*gpu, *R, a.size());
  EXPECT_TRUE(all_close(gr, r, kRtol, kAtol, "residual"));
  std::vector<float> out(a.size()), rstd(N);
  cpu->rmsnorm_forward(out.data(), rstd.data(), gr.data(), w.data(), N, C, 1e-5f);
  EXPECT_TRUE(all_close(act_to_host(*gpu, *O, a.size()), out, kRtol, kAtol, "residual rmsnorm out"));
  EXPECT_TRUE(all_close(f32_to_host(*gpu, *S, N), rstd, 1e-5, 1e-6, "residual rmsnorm rstd"));
}

TEST_F(GpuLlamaOps, RopeForwardBackwardInPlace) {
  const int B = 2, T = 33, NH = 9, NKV = 3, hd = 64, stride = (NH + 2 * NKV) * hd;
  const RopeTable tab = rope_table(T, hd, 100000.0);
  const auto x = random_bf16(size_t(B) * T * stride, rng);
  std::vector<float> fwd = x, bwd = x;
  cpu->rope_forward(fwd.data(), tab.cos.data(), tab.sin.data(), B, T, NH + NKV, hd, stride);
  cpu->rope_backward(bwd.data(), tab.cos.data(), tab.sin.data(), B, T, NH + NKV, hd, stride);
  auto Cs = f32_from(*gpu, tab.cos), Sn = f32_from(*gpu, tab.sin), X = act_from(*gpu, x), Y = act_from(*gpu, x);
  gpu->rope_forward(X->get(), Cs->f32(), Sn->f32(), B, T, NH + NKV, hd, stride);
  gpu->rope_backward(Y->get(), Cs->f32(), Sn->f32(), B, T, NH + NKV, hd, stride);
  const auto gx = act_to_host(*gpu, *X, x.size()), gy = act_to_host(*gpu, *Y, x.size());
  EXPECT_TRUE(all_close(gx, fwd, kRtol, kAtol, "rope forward"));
  EXPECT_TRUE(all_close(gy, bwd, kRtol, kAtol, "rope backward"));
  for (size_t r = 0; r < size_t(B) * T; ++r)  // v untouched, bit for bit
    for (int c = (NH + NKV) * hd; c < stride; ++c) ASSERT_EQ(gx[r * stride + c], x[r * stride + c]);
}

TEST_F(GpuLlamaOps, SwigluForwardBackward) {
  const int N = 29, F = 1536;
  const auto gu = random_bf16(size_t(N) * 2 * F, rng, -4.f, 4.f), d = random_bf16(size_t(N) * F, rng);
  const auto dgu0 = random_bf16(gu.size(), rng);
  std::vector<float> out(size_t(N) * F), dgu = dgu0;
  cpu->swiglu_forward(out.data(), gu.data(), N, F);
  cpu->swiglu_backward(dgu.data(), d.data(), gu.data(), N, F);
  auto GU = act_from(*gpu, gu), D = act_from(*gpu, d), O = act_poisoned(*gpu, out.size()), DGU = act_from(*gpu, dgu0);
  gpu->swiglu_forward(O->get(), GU->get(), N, F);
  gpu->swiglu_backward(DGU->get(), D->get(), GU->get(), N, F);
  EXPECT_TRUE(all_close(act_to_host(*gpu, *O, out.size()), out, kRtol, kAtol, "swiglu out"));
  EXPECT_TRUE(all_close(act_to_host(*gpu, *DGU, dgu.size()), dgu, kRtol, kAtol, "swiglu dgate_up"));
}

TEST_F(GpuLlamaOps, EmbeddingWithoutPositionTable) {
  const int B = 2, T = 9, C = 64, V = 13;
  std::vector<int32_t> tok(size_t(B) * T);
  for (auto& t : tok) t = std::uniform_int_distribution<int>(0, V - 1)(rng);
  const auto wte = random_bf16(size_t(V) * C, rng), dout = random_bf16(size_t(B) * T * C, rng);
  const auto dwte0 = random_bf16(wte.size(), rng);
  std::vector<float> dwte = dwte0;
  cpu->embedding_backward(dwte.data(), nullptr, dout.data(), tok.data(), B, T, C);
  auto W = act_from(*gpu, wte), D = act_from(*gpu, dout), O = act_poisoned(*gpu, dout.size());
  auto DW = act_from(*gpu, dwte0), TK = i32_from(*gpu, tok);
  gpu->embedding_forward(O->get(), TK->i32(), W->get(), nullptr, B, T, C);
  gpu->embedding_backward(DW->get(), nullptr, D->get(), TK->i32(), B, T, C);
  const auto o = act_to_host(*gpu, *O, dout.size());
  for (size_t i = 0; i < tok.size(); ++i)
    for (int c = 0; c < C; ++c) ASSERT_EQ(o[i * C + c], wte[size_t(tok[i]) * C + c]) << "row " << i;
  EXPECT_TRUE(all_close(act_to_host(*gpu, *DW, wte.size()), dwte, kRtol, kAtol, "dwte"));
}

// Grouped-query attention on the flash kernels and on the reference kernels (ZT_CUDA_ATTENTION=naive,
// and a head size the flash kernels are not built for, 24), each against the CPU backend.
TEST_F(GpuLlamaOps, GroupedQueryAttentionFlashAndReference) {
  struct S {
    int B, T, NH, NKV, hs;
  };
  setenv("ZT_CUDA_ATTENTION", "naive", 1);
  std::unique_ptr<Backend> naive = make_cuda_backend(0);
  unsetenv("ZT_CUDA_ATTENTION");
  for (Backend* be : {gpu.get(), naive.get()})
    for (const S s : {S{2, 130, 9, 3, 64}, S{1, 64, 4, 1, 32}, S{1, 65, 8, 2, 128}, S{2, 70, 4, 4, 64}, S{2, 33, 6, 2, 24}}) {
      const std::string tag = std::string(be == gpu.get() ? "default" : "naive") + " B=" + std::to_string(s.B) +
                              " T=" + std::to_string(s.T) + " NH=" + std::to_string(s.NH) +
                              " NKV=" + std::to_string(s.NKV) + " hs=" + std::to_string(s.hs);
      SCOPED_TRACE(tag);
      const int C = s.NH * s.hs, W = (s.NH + 2 * s.NKV) * s.hs;
      const auto qkv = random_bf16(size_t(s.B) * s.T * W, rng), dout = random_bf16(size_t(s.B) * s.T * C, rng);
      std::vector<float> out(dout.size()), saved(cpu->attention_saved_bytes(s.B, s.T, C, s.NH) / 4),
          dqkv(qkv.size(), 0.f);
      cpu->attention_forward(out.data(), saved.data(), qkv.data(), s.B, s.T, C, s.NH, s.NKV);
      cpu->attention_backward(dqkv.data(), dout.data(), qkv.data(), saved.data(), s.B, s.T, C, s.NH, s.NKV);
      auto X = act_from(*be, qkv), D = act_from(*be, dout), O = act_poisoned(*be, out.size());
      Buf sv(*be, be->attention_saved_bytes(s.B, s.T, C, s.NH));
      auto DX = act_from(*be, std::vector<float>(qkv.size(), 0.f));
      be->attention_forward(O->get(), sv.get(), X->get(), s.B, s.T, C, s.NH, s.NKV);
      be->attention_backward(DX->get(), D->get(), X->get(), sv.get(), s.B, s.T, C, s.NH, s.NKV);
      EXPECT_TRUE(all_close(act_to_host(*be, *O, out.size()), out, kAttRel, kAttAtol, tag + " out"));
      const auto g = act_to_host(*be, *DX, qkv.size());
      // q, k and v parts separately (their scales differ).
      const int lo[] = {0, C, C + s.NKV * s.hs}, hi[] = {C, C + s.NKV * s.hs, W};
      const char* part[] = {"dq", "dk", "dv"};
      for (int p = 0; p < 3; ++p) {
        std::vector<float> a, b;
        for (size_t r = 0; r < size_t(s.B) * s.T; ++r)
          for (int c = lo[p]; c < hi[p]; ++c) a.push_back(g[r * W + c]), b.push_back(dqkv[r * W + c]);
        EXPECT_TRUE(all_close(a, b, kAttRel, kAttAtol, tag + " " + part[p]));
      }
    }
}

TEST_F(GpuLlamaOps, AllHeadsIsTheMultiHeadPathBitForBit) {
  const int B = 2, T = 100, NH = 4, hs = 64, C = NH * hs;
  const auto qkv = random_bf16(size_t(B) * T * 3 * C, rng), dout = random_bf16(size_t(B) * T * C, rng);
  auto X = act_from(*gpu, qkv), D = act_from(*gpu, dout);
  std::vector<float> res[2];
  for (int k = 0; k < 2; ++k) {
    auto O = act_poisoned(*gpu, dout.size());
    auto DX = act_from(*gpu, std::vector<float>(qkv.size(), 0.f));
    Buf sv(*gpu, gpu->attention_saved_bytes(B, T, C, NH));
    if (k == 0) {
      gpu->attention_forward(O->get(), sv.get(), X->get(), B, T, C, NH);
      gpu->attention_backward(DX->get(), D->get(), X->get(), sv.get(), B, T, C, NH);
    } else {
      gpu->attention_forward(O->get(), sv.get(), X->get(), B, T, C, NH, NH);
      gpu->attention_backward(DX->get(), D->get(), X->get(), sv.get(), B, T, C, NH, NH);
    }
    res[k] = act_to_host(*gpu, *O, dout.size());
    const auto d = act_to_host(*gpu, *DX, qkv.size());
    res[k].insert(res[k].end(), d.begin(), d.end());
  }
  EXPECT_EQ(res[0], res[1]);
}

TEST_F(GpuLlamaOps, GroupedQueryRefusesHeadCountsThatDoNotDivide) {
  Buf a(*gpu, 1 << 16), b(*gpu, 1 << 16), c(*gpu, 1 << 16);
  EXPECT_THROW(gpu->attention_forward(a.get(), b.get(), c.get(), 1, 8, 256, 4, 3), std::invalid_argument);
}

}  // namespace
}  // namespace zt::test
