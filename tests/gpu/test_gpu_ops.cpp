// Every CUDA backend op (the fused ones too) against the CPU backend (fp32) and, where it is short
// to write, an fp64 host reference, on fresh random bf16-representable inputs with NaN-poisoned outputs.
//
// Tolerance. Both backends receive identical inputs (values already rounded to bf16), so the
// CUDA result differs from exact math by one bf16 rounding of each output element plus fp32
// accumulation-order and fast-exp differences (~1e-6 relative to the summed magnitudes). One
// rounding to bf16 (8-bit significand, the implicit bit included) is at most half an ulp, i.e. the
// unit roundoff u = 2⁻⁸ relative. kRtol = u allows exactly ONE rounding; the absolute floor
// 2⁻¹⁰·max|ref| covers elements that come out of cancellation near zero. Where the GPU rounds
// twice on the way (an intermediate stored in bf16 and then the output), the comparison either
// feeds the CPU the same bf16 intermediate (so one rounding remains) or says why it allows more.
// Outputs that stay fp32 (LayerNorm statistics, losses) get 1e-5 relative (no bf16 rounding).
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <utility>

#include "tests/gpu/gpu_test_support.h"

namespace zt::test {
namespace {

constexpr double kRtol = 1.0 / 256, kAtol = 1.0 / 1024;  // one bf16 rounding (u = 2⁻⁸) + floor
constexpr double kF32Rtol = 1e-5, kF32Atol = 1e-6;

class GpuOps : public ::testing::Test {
 protected:
  void SetUp() override {
    gpu = make_cuda_backend(0);
    cpu = make_cpu_backend();
    ASSERT_EQ(gpu->act_dtype(), DType::BF16);
  }
  std::unique_ptr<Backend> gpu, cpu;
  std::mt19937 rng{12345};
};

std::vector<double> gelu_ref(const std::vector<float>& x) {
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    y[i] = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
  }
  return y;
}

TEST_F(GpuOps, EmbeddingForwardBackward) {
  const int B = 2, T = 7, C = 48, V = 11;  // V small so tokens repeat (tests the wte reduction)
  std::vector<int32_t> tok(B * T);
  for (auto& t : tok) t = std::uniform_int_distribution<int>(0, V - 1)(rng);
  auto wte = random_bf16(V * C, rng), wpe = random_bf16(T * C, rng), dout = random_bf16(B * T * C, rng);
  auto dwte0 = random_bf16(V * C, rng), dwpe0 = random_bf16(T * C, rng);
  std::vector<double> out_ref(B * T * C), dwte_ref(dwte0.begin(), dwte0.end()), dwpe_ref(dwpe0.begin(), dwpe0.end());
  for (int i = 0; i < B * T; ++i)
    for (int c = 0; c < C; ++c) {
      out_ref[i * C + c] = (double)wte[tok[i] * C + c] + wpe[(i % T) * C + c];
      dwte_ref[tok[i] * C + c] += dout[i * C + c];
      dwpe_ref[(i % T) * C + c] += dout[i * C + c];
    }
  std::vector<float> res[2][3];
  Backend* bes[2] = {gpu.get(), cpu.get()};
  for (int k = 0; k < 2; ++k) {
    Backend& be = *bes[k];
    auto t = i32_from(be, tok);
    auto w = act_from(be, wte), p = act_from(be, wpe), d = act_from(be, dout);
    auto out = act_poisoned(be, B * T * C);
    auto dw = act_from(be, dwte0), dp = act_from(be, dwpe0);
    be.embedding_forward(out->get(), t->i32(), w->get(), p->get(), B, T, C);
    be.embedding_backward(dw->get(), dp->get(), d->get(), t->i32(), B, T, C);
    res[k][0] = act_to_host(be, *out, B * T * C);
    res[k][1] = act_to_host(be, *dw, V * C);
    res[k][2] = act_to_host(be, *dp, T * C);
  }
  EXPECT_TRUE(all_close(res[0][0], out_ref, kRtol, kAtol, "embedding out vs fp64"));
  EXPECT_TRUE(all_close(res[0][1], dwte_ref, kRtol, kAtol, "dwte vs fp64"));
  EXPECT_TRUE(all_close(res[0][2], dwpe_ref, kRtol, kAtol, "dwpe vs fp64"));
  for (int j = 0; j < 3; ++j) EXPECT_TRUE(all_close(res[0][j], res[1][j], kRtol, kAtol, "embedding vs cpu"));
}

TEST_F(GpuOps, LayerNormForwardBackward) {
  for (int C : {48, 771}) {  // 771: rows not a multiple of the warp width
    const int N = 13;
    auto x = random_bf16(N * C, rng, -2, 3), w = random_bf16(C, rng, 0.5f, 1.5f), b = random_bf16(C, rng);
    auto dout = random_bf16(N * C, rng), dinp0 = random_bf16(N * C, rng);
    auto dw0 = random_bf16(C, rng), db0 = random_bf16(C, rng);
    std::vector<double> y_ref(N * C);
    for (int r = 0; r < N; ++r) {
      double m = 0, v = 0;
      for (int c = 0; c < C; ++c) m += x[r * C + c];
      m /= C;
      for (int c = 0; c < C; ++c) v += (x[r * C + c] - m) * (x[r * C + c] - m);
      const double rs = 1 / std::sqrt(v / C + 1e-5);
      for (int c = 0; c < C; ++c) y_ref[r * C + c] = (x[r * C + c] - m) * rs * w[c] + b[c];
    }
    std::vector<float> res[2][6];
    Backend* bes[2] = {gpu.get(), cpu.get()};
    for (int k = 0; k < 2; ++k) {
      Backend& be = *bes[k];
      auto X = act_from(be, x), W = act_from(be, w), Bb = act_from(be, b), D = act_from(be, dout);
      auto Y = act_poisoned(be, N * C);
      auto mean = f32_poisoned(be, N), rstd = f32_poisoned(be, N);
      auto DX = act_from(be, dinp0), DW = act_from(be, dw0), DB = act_from(be, db0);
      be.layernorm_forward(Y->get(), mean->f32(), rstd->f32(), X->get(), W->get(), Bb->get(), N, C);
      be.layernorm_backward(DX->get(), DW->get(), DB->get(), D->get(), X->get(), W->get(), mean->f32(), rstd->f32(),
                            N, C);
      res[k][0] = act_to_host(be, *Y, N * C);
      res[k][1] = f32_to_host(be, *mean, N);
      res[k][2] = f32_to_host(be, *rstd, N);
      res[k][3] = act_to_host(be, *DX, N * C);
      res[k][4] = act_to_host(be, *DW, C);
      res[k][5] = act_to_host(be, *DB, C);
    }
    const std::string tag = " C=" + std::to_string(C);
    EXPECT_TRUE(all_close(res[0][0], y_ref, kRtol, kAtol, "layernorm out vs fp64" + tag));
    EXPECT_TRUE(all_close(res[0][1], res[1][1], kF32Rtol, kF32Atol, "layernorm mean vs cpu" + tag));
    EXPECT_TRUE(all_close(res[0][2], res[1][2], kF32Rtol, kF32Atol, "layernorm rstd vs cpu" + tag));
    const char* names[] = {"out", "mean", "rstd", "dinp", "dw", "db"};
    for (int j : {0, 3, 4, 5})
      EXPECT_TRUE(all_close(res[0][j], res[1][j], kRtol, kAtol, std::string("layernorm ") + names[j] + " vs cpu" + tag));
  }
}

TEST_F(GpuOps, MatmulForwardBackward) {
  // OC = 53 is odd (like GPT-2's vocab 50257): unaligned leading dimensions must work too.
  for (int OC : {40, 53}) {
    for (bool with_bias : {true, false}) {
      const int N = 13, IC = 48;
      auto x = random_bf16(N * IC, rng), w = random_bf16(OC * IC, rng), bias = random_bf16(OC, rng);
      auto dout = random_bf16(N * OC, rng), dinp0 = random_bf16(N * IC, rng), dw0 = random_bf16(OC * IC, rng),
           db0 = random_bf16(OC, rng);
      std::vector<double> y_ref(N * OC);
      for (int n = 0; n < N; ++n)
        for (int o = 0; o < OC; ++o) {
          double s = with_bias ? bias[o] : 0.0;
          for (int i = 0; i < IC; ++i) s += (double)x[n * IC + i] * w[o * IC + i];
          y_ref[n * OC + o] = s;
        }
      std::vector<float> res[2][4];
      Backend* bes[2] = {gpu.get(), cpu.get()};
      for (int k = 0; k < 2; ++k) {
        Backend& be = *bes[k];
        auto X = act_from(be, x), W = act_from(be, w), Bb = act_from(be, bias), D = act_from(be, dout);
        auto Y = act_poisoned(be, N * OC);
        auto DX = act_from(be, dinp0), DW = act_from(be, dw0), DB = act_from(be, db0);
        be.matmul_forward(Y->get(), X->get(), W->get(), with_bias ? Bb->get() : nullptr, N, IC, OC);
        be.matmul_backward(DX->get(), DW->get(), with_bias ? DB->get() : nullptr, D->get(), X->get(), W->get(), N, IC,
                           OC);
        res[k][0] = act_to_host(be, *Y, N * OC);
        res[k][1] = act_to_host(be, *DX, N * IC);
        res[k][2] = act_to_host(be, *DW, OC * IC);
        res[k][3] = act_to_host(be, *DB, OC);
      }
      const std::string tag = " OC=" + std::to_string(OC) + (with_bias ? " bias" : " no-bias");
      EXPECT_TRUE(all_close(res[0][0], y_ref, kRtol, kAtol, "matmul out vs fp64" + tag));
      const char* names[] = {"out", "dinp", "dw", "dbias"};
      for (int j = 0; j < 4; ++j)
        EXPECT_TRUE(all_close(res[0][j], res[1][j], kRtol, kAtol, std::string("matmul ") + names[j] + " vs cpu" + tag));
      if (!with_bias) {
        EXPECT_TRUE(all_close(res[0][3], db0, 0, 0, "dbias untouched when null" + tag));
      }
    }
  }
}

// Attention (flash kernels and the reference) is tested in test_gpu_attention.cpp.

// Generation's attention: one query against a bf16 key/value cache longer than what is filled
// (T = 1, a few, past one 128-thread pass, 1024), multi-head and grouped-query (NKV < NH, the
// cache rows (NH + 2·NKV)·hs wide), against the CPU backend on identical inputs; one rounding of the
// output plus the fp32 softmax's reordering.
TEST_F(GpuOps, AttentionDecodeMatchesCpu) {
  for (const auto [B, Tmax, t, C, NH, NKV] :
       std::vector<std::array<int, 6>>{{1, 4, 1, 64, 4, 4},       {2, 16, 9, 96, 3, 3},   {1, 300, 257, 128, 2, 2},
                                       {1, 1024, 1024, 768, 12, 12}, {2, 16, 9, 128, 8, 2}, {1, 300, 257, 576, 9, 3},
                                       {1, 40, 33, 64, 4, 1}}) {
    const size_t cache_n = size_t(B) * Tmax * size_t(NH + 2 * NKV) * size_t(C / NH), out_n = size_t(B) * C;
    const auto cache = random_bf16(cache_n, rng, -2, 2);
    std::vector<float> res[2];
    Backend* bes[2] = {gpu.get(), cpu.get()};
    for (int k = 0; k < 2; ++k) {
      auto K = act_from(*bes[k], cache);
      auto O = act_poisoned(*bes[k], out_n);
      bes[k]->attention_decode(O->get(), K->get(), B, Tmax, t, C, NH, NKV);
      res[k] = act_to_host(*bes[k], *O, out_n);
    }
    EXPECT_TRUE(all_close(res[0], res[1], kRtol, kAtol,
                          "attention_decode B=" + std::to_string(B) + " t=" + std::to_string(t) + " C=" +
                              std::to_string(C) + " NH=" + std::to_string(NH) + " NKV=" + std::to_string(NKV)));
  }
}

TEST_F(GpuOps, GeluResidualAccumulate) {
  const size_t n = 1001;
  auto x = random_bf16(n, rng, -4, 4), y = random_bf16(n, rng, -4, 4), dout = random_bf16(n, rng),
       dinp0 = random_bf16(n, rng);
  std::vector<double> sum_ref(n), acc_ref(n);
  for (size_t i = 0; i < n; ++i) {
    sum_ref[i] = (double)x[i] + y[i];
    acc_ref[i] = (double)dinp0[i] + x[i];
  }
  std::vector<float> res[2][4];
  Backend* bes[2] = {gpu.get(), cpu.get()};
  for (int k = 0; k < 2; ++k) {
    Backend& be = *bes[k];
    auto X = act_from(be, x), Yb = act_from(be, y), D = act_from(be, dout), DX = act_from(be, dinp0);
    auto G = act_poisoned(be, n), S = act_poisoned(be, n);
    auto A = act_from(be, dinp0);
    be.gelu_forward(G->get(), X->get(), n);
    be.gelu_backward(DX->get(), X->get(), D->get(), n);
    be.residual_forward(S->get(), X->get(), Yb->get(), n);
    be.accumulate(A->get(), X->get(), n);
    res[k][0] = act_to_host(be, *G, n);
    res[k][1] = act_to_host(be, *DX, n);
    res[k][2] = act_to_host(be, *S, n);
    res[k][3] = act_to_host(be, *A, n);
  }
  EXPECT_TRUE(all_close(res[0][0], gelu_ref(x), kRtol, kAtol, "gelu out vs fp64"));
  EXPECT_TRUE(all_close(res[0][2], sum_ref, kRtol, 0, "residual vs fp64"));
  EXPECT_TRUE(all_close(res[0][3], acc_ref, kRtol, 0, "accumulate vs fp64"));
  const char* names[] = {"gelu out", "gelu dinp", "residual", "accumulate"};
  for (int j = 0; j < 4; ++j) EXPECT_TRUE(all_close(res[0][j], res[1][j], kRtol, kAtol, std::string(names[j]) + " vs cpu"));
}

TEST_F(GpuOps, CrossEntropyPaddedInPlace) {
  // V not a multiple of 8, rows padded to Vp with NaN in the padding (must not be read), and the
  // gradient written over the logits (in place) as the model calls it.
  for (auto [V, Vp] : {std::pair{53, 53}, {53, 128}, {50257, 50304}}) {
    const int N = V > 1000 ? 3 : 13;
    const float dloss = 0.75f;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    auto real = random_bf16(size_t(N) * V, rng, -5, 5);
    std::vector<float> logits(size_t(N) * Vp, nan);
    for (int r = 0; r < N; ++r) std::copy_n(real.begin() + size_t(r) * V, V, logits.begin() + size_t(r) * Vp);
    std::vector<int32_t> tgt(N);
    for (auto& t : tgt) t = std::uniform_int_distribution<int>(0, V - 1)(rng);
    tgt[1] = -1;  // an ignored row
    int valid = 0;
    for (int t : tgt) valid += t >= 0;
    std::vector<double> loss_ref(N), dl_ref(size_t(N) * Vp, 0.0);
    for (int r = 0; r < N; ++r) {
      if (tgt[r] < 0) continue;
      const float* x = real.data() + size_t(r) * V;
      double mx = -1e300, s = 0;
      for (int i = 0; i < V; ++i) mx = std::max(mx, (double)x[i]);
      for (int i = 0; i < V; ++i) s += std::exp(x[i] - mx);
      loss_ref[r] = std::log(s) + mx - x[tgt[r]];
      for (int i = 0; i < V; ++i) dl_ref[size_t(r) * Vp + i] = (std::exp(x[i] - mx) / s - (i == tgt[r])) * dloss / valid;
    }
    std::vector<float> res[2][2];
    Backend* bes[2] = {gpu.get(), cpu.get()};
    for (int k = 0; k < 2; ++k) {
      Backend& be = *bes[k];
      auto L = act_from(be, logits), Tg = i32_from(be, tgt);
      auto losses = f32_poisoned(be, N);
      be.crossentropy_forward_backward(losses->f32(), L->get(), L->get(), Tg->i32(), N, V, Vp, dloss);
      res[k][0] = f32_to_host(be, *losses, N);
      res[k][1] = act_to_host(be, *L, size_t(N) * Vp);
    }
    const std::string tag = " V=" + std::to_string(V) + " Vp=" + std::to_string(Vp);
    EXPECT_TRUE(all_close(res[0][0], loss_ref, kF32Rtol, kF32Atol, "ce losses vs fp64" + tag));
    EXPECT_TRUE(all_close(res[0][1], dl_ref, kRtol, kAtol, "ce dlogits vs fp64" + tag));
    EXPECT_TRUE(all_close(res[0][0], res[1][0], kF32Rtol, kF32Atol, "ce losses vs cpu" + tag));
    EXPECT_TRUE(all_close(res[0][1], res[1][1], kRtol, kAtol, "ce dlogits vs cpu" + tag));
  }
}

// The fused ops against the CPU backend's (which tests/model/test_cpu_fused_ops.cpp pins to the
// unfused ops), on GPT-2-like widths (the cuBLASLt epilogue path) and odd ones (the fallback path).
TEST_F(GpuOps, MatmulBiasGeluForwardAndBackward) {
  // gelu out, one bf16 rounding of the output plus pre's: the epilogue path takes gelu of the
  // fp32 pre, the fallback path gelu of the stored bf16 pre, whose rounding (u) reaches the output
  // times gelu's relative gain |x·gelu'(x)/gelu(x)|, which is ≤ 1.3 for x > −1 (below, |gelu| <
  // 0.16 and the absolute floor takes the difference). So 1 + 1.3 roundings, allowed as 2.5·u.
  constexpr double kGeluOutRtol = 2.5 * kRtol;
  for (auto [N, IC, OC] : {std::tuple{64, 96, 384}, {37, 40, 53}}) {
    auto x = random_bf16(size_t(N) * IC, rng), w = random_bf16(size_t(OC) * IC, rng, -0.3f, 0.3f),
         b = random_bf16(OC, rng);
    // backward of the layer that consumes gelu(pre): here IC <-> OC swap roles
    auto w2 = random_bf16(size_t(IC) * OC, rng, -0.3f, 0.3f), dout2 = random_bf16(size_t(N) * IC, rng);
    auto dw0 = random_bf16(size_t(IC) * OC, rng), db0 = random_bf16(IC, rng);
    std::vector<float> res[2][5];
    Backend* bes[2] = {gpu.get(), cpu.get()};
    for (int k = 0; k < 2; ++k) {
      Backend& be = *bes[k];
      auto X = act_from(be, x), W = act_from(be, w), Bb = act_from(be, b);
      auto out = act_poisoned(be, size_t(N) * OC), pre = act_poisoned(be, size_t(N) * OC);
      be.matmul_bias_gelu_forward(out->get(), pre->get(), X->get(), W->get(), Bb->get(), N, IC, OC);
      res[k][0] = act_to_host(be, *pre, size_t(N) * OC);
      res[k][1] = act_to_host(be, *out, size_t(N) * OC);
    }
    // Both backwards consume the GPU's (bf16) forward outputs, as the model's backward consumes
    // its own: with the CPU's fp32 ones, dw = dout2ᵀ·out would carry out's rounding on top of
    // its own (two roundings against a one-rounding allowance).
    for (int k = 0; k < 2; ++k) {
      Backend& be = *bes[k];
      auto W2 = act_from(be, w2), D2 = act_from(be, dout2);
      auto pre = act_from(be, res[0][0]), out = act_from(be, res[0][1]);
      auto dpre = act_poisoned(be, size_t(N) * OC), dw = act_from(be, dw0), db = act_from(be, db0);
      // next layer: in = gelu(pre) [N, OC], W2 [IC, OC], dout2 [N, IC]
      be.matmul_backward_gelu(dpre->get(), dw->get(), db->get(), D2->get(), out->get(), pre->get(), W2->get(), N, OC, IC);
      res[k][2] = act_to_host(be, *dpre, size_t(N) * OC);
      res[k][3] = act_to_host(be, *dw, size_t(IC) * OC);
      res[k][4] = act_to_host(be, *db, IC);
    }
    const std::string tag = " N=" + std::to_string(N) + " IC=" + std::to_string(IC) + " OC=" + std::to_string(OC);
    const char* names[] = {"pre", "gelu out", "dpre", "dw", "db"};
    for (int j = 0; j < 5; ++j)  // each one rounding, except gelu out (above)
      EXPECT_TRUE(all_close(res[0][j], res[1][j], j == 1 ? kGeluOutRtol : kRtol, kAtol,
                            std::string("bias+gelu ") + names[j] + " vs cpu" + tag));
  }
}

TEST_F(GpuOps, ResidualLayerNorm) {
  for (int C : {768, 771}) {
    const int N = 19;
    auto a = random_bf16(size_t(N) * C, rng, -2, 2), bb = random_bf16(size_t(N) * C, rng, -2, 2),
         w = random_bf16(C, rng, 0.5f, 1.5f), b = random_bf16(C, rng);
    std::vector<float> res[2][4];
    Backend* bes[2] = {gpu.get(), cpu.get()};
    for (int k = 0; k < 2; ++k) {
      Backend& be = *bes[k];
      auto A = act_from(be, a), Bv = act_from(be, bb), W = act_from(be, w), Bb = act_from(be, b);
      auto out = act_poisoned(be, size_t(N) * C), mean = f32_poisoned(be, N), rstd = f32_poisoned(be, N);
      be.residual_layernorm_forward(A->get(), out->get(), mean->f32(), rstd->f32(), A->get(), Bv->get(), W->get(),
                                    Bb->get(), N, C);  // resid over a, as the model calls it
      res[k][0] = act_to_host(be, *A, size_t(N) * C);
      res[k][1] = act_to_host(be, *out, size_t(N) * C);
      res[k][2] = f32_to_host(be, *mean, N);
      res[k][3] = f32_to_host(be, *rstd, N);
    }
    // The GPU normalizes its bf16 residual, so its output went through two roundings (residual,
    // then output) where the CPU's fused op rounds none. Reference for out, mean and rstd: the
    // CPU's plain LayerNorm of the GPU's bf16 residual, leaving the output's one rounding.
    std::vector<float> ln[3];
    {
      auto X = act_from(*cpu, res[0][0]), W = act_from(*cpu, w), Bb = act_from(*cpu, b);
      auto out = act_poisoned(*cpu, size_t(N) * C), mean = f32_poisoned(*cpu, N), rstd = f32_poisoned(*cpu, N);
      cpu->layernorm_forward(out->get(), mean->f32(), rstd->f32(), X->get(), W->get(), Bb->get(), N, C);
      ln[0] = act_to_host(*cpu, *out, size_t(N) * C);
      ln[1] = f32_to_host(*cpu, *mean, N);
      ln[2] = f32_to_host(*cpu, *rstd, N);
    }
    const std::string tag = " C=" + std::to_string(C);
    // a + b of two bf16 values is exact in fp32: the GPU's residual is one rounding of it.
    EXPECT_TRUE(all_close(res[0][0], res[1][0], kRtol, 0, "residual vs cpu" + tag));
    EXPECT_TRUE(all_close(res[0][1], ln[0], kRtol, kAtol, "residual layernorm out vs cpu layernorm of it" + tag));
    // fp32 statistics of identical (bf16) inputs: no bf16 rounding between them, only summation
    // order; one bf16 rounding's allowance is far more than that needs.
    EXPECT_TRUE(all_close(res[0][2], ln[1], kRtol, kAtol, "mean vs cpu" + tag));
    EXPECT_TRUE(all_close(res[0][3], ln[2], kRtol, kAtol, "rstd vs cpu" + tag));
  }
}

TEST_F(GpuOps, LmHeadPaddedVocab) {
  for (auto [V, Vp] : {std::pair{53, 128}, {50257, 50304}}) {
    const int N = 24, C = 64;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    auto x = random_bf16(size_t(N) * C, rng), w = random_bf16(size_t(V) * C, rng, -0.3f, 0.3f);
    std::vector<float> g(size_t(N) * Vp, nan);  // padded gradient columns poisoned: must not be read
    for (int r = 0; r < N; ++r)
      for (int v = 0; v < V; ++v) g[size_t(r) * Vp + v] = bf16_round(std::uniform_real_distribution<float>(-1, 1)(rng));
    auto dx0 = random_bf16(size_t(N) * C, rng), dw0 = random_bf16(size_t(V) * C, rng);
    std::vector<float> res[2][3];
    Backend* bes[2] = {gpu.get(), cpu.get()};
    for (int k = 0; k < 2; ++k) {
      Backend& be = *bes[k];
      auto X = act_from(be, x), W = act_from(be, w), G = act_from(be, g), DX = act_from(be, dx0), DW = act_from(be, dw0);
      auto L = act_poisoned(be, size_t(N) * Vp);
      be.lm_head_forward(L->get(), X->get(), W->get(), N, C, V, Vp);
      be.lm_head_backward(DX->get(), DW->get(), G->get(), X->get(), W->get(), N, C, V, Vp);
      res[k][0] = act_to_host(be, *L, size_t(N) * Vp);
      res[k][1] = act_to_host(be, *DX, size_t(N) * C);
      res[k][2] = act_to_host(be, *DW, size_t(V) * C);
    }
    const std::string tag = " V=" + std::to_string(V);
    for (int r = 0; r < N; ++r)
      for (int v = V; v < Vp; ++v) ASSERT_EQ(res[0][0][size_t(r) * Vp + v], 0.f) << "padded logit" << tag;
    const char* names[] = {"logits", "dinp", "dw"};
    for (int j = 0; j < 3; ++j)
      EXPECT_TRUE(all_close(res[0][j], res[1][j], kRtol, kAtol, std::string("lm head ") + names[j] + " vs cpu" + tag));
  }
}

TEST_F(GpuOps, AdamWStepMatchesCpuOverSteps) {
  const size_t n = 3000;
  auto p0 = random_bf16(n, rng), m0 = random_bf16(n, rng, -0.1f, 0.1f), v0 = random_bf16(n, rng, 0.01f, 0.1f);
  for (bool decoupled : {true, false}) {
    AdamWHyper h;
    h.lr = 1e-2f;
    h.weight_decay = 0.1f;
    h.decoupled = decoupled;
    h.grad_scale = 0.5f;
    std::vector<float> res[2][3];
    Backend* bes[2] = {gpu.get(), cpu.get()};
    for (int k = 0; k < 2; ++k) {
      Backend& be = *bes[k];
      std::mt19937 grng(7);  // same grads on both backends
      auto P = f32_from(be, p0), M = f32_from(be, m0), Vv = f32_from(be, v0);
      for (int s = 1; s <= 3; ++s) {
        h.step = s;
        auto G = f32_from(be, random_bf16(n, grng));
        be.adamw_step(P->f32(), G->f32(), M->f32(), Vv->f32(), n, h);
        be.synchronize();
      }
      res[k][0] = f32_to_host(be, *P, n);
      res[k][1] = f32_to_host(be, *M, n);
      res[k][2] = f32_to_host(be, *Vv, n);
    }
    // Both are fp32 with the same formula; only operation order/fusing differs (a few ulps).
    for (int j = 0; j < 3; ++j) EXPECT_TRUE(all_close(res[0][j], res[1][j], 1e-5, 1e-6, "adamw_step vs cpu"));
  }
}

TEST_F(GpuOps, ConversionFromDeviceAndHostPointers) {
  const size_t n = 777;
  auto x = random_bf16(n, rng, -100, 100);
  auto D = f32_from(*gpu, x);  // device-resident fp32 source
  auto A1 = act_poisoned(*gpu, n), A2 = act_poisoned(*gpu, n);
  gpu->f32_to_act(A1->get(), D->f32(), n);  // device -> device
  gpu->f32_to_act(A2->get(), x.data(), n);  // host -> device
  auto back = f32_poisoned(*gpu, n);
  gpu->act_to_f32(back->f32(), A1->get(), n);  // device -> device
  EXPECT_TRUE(all_close(f32_to_host(*gpu, *back, n), x, 0, 0, "f32->bf16->f32 via device pointers"));
  EXPECT_TRUE(all_close(act_to_host(*gpu, *A2, n), x, 0, 0, "f32->bf16 from a host pointer"));
}

}  // namespace
}  // namespace zt::test
