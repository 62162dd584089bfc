// Llama's CPU Backend ops composed as transformers' LlamaForCausalLM (embedding; per layer
// x += o_proj(attn(rope(q), rope(k), v)) on rmsnorm(x), x += down(swiglu(gate_up)) on rmsnorm(x);
// final rmsnorm; LM head; mean cross-entropy) against what transformers itself computed for the
// fixtures of tests/data/llama (scripts/make_llama_reference.py): logits, loss, every parameter
// gradient and the parameters after one AdamW step. This pins the ops' conventions (rotate-half
// pairs, the llama3 frequencies, query head h on key/value head h / (H / Hkv), RMSNorm's weight
// and eps, SwiGLU's gate and up, the tied head) to the definition, independently of the model code.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/backend.h"
#include "kernels/rope_table.h"
#include "tests/model/llama_fixture.h"

namespace zt {
namespace {

using Vec = std::vector<float>;
using nlohmann::json;
using test::expect_close;
using test::read_f32_safetensors;
using test::read_json_file;

Vec concat(std::initializer_list<const Vec*> parts) {
  Vec v;
  for (const Vec* p : parts) v.insert(v.end(), p->begin(), p->end());
  return v;
}

void run_case(const std::string& name) {
  SCOPED_TRACE(name);
  const std::string dir = std::string(ZT_LLAMA_FIXTURES_DIR) + "/" + name;
  const json cfg = read_json_file(dir + "/config.json"), ref = read_json_file(dir + "/reference.json");
  auto W = read_f32_safetensors(dir + "/model.safetensors");
  const auto R = read_f32_safetensors(dir + "/reference.safetensors");
  const int V = cfg["vocab_size"], d = cfg["hidden_size"], I = cfg["intermediate_size"];
  const int L = cfg["num_hidden_layers"], H = cfg["num_attention_heads"], Hkv = cfg["num_key_value_heads"];
  const int hd = cfg["head_dim"], C = H * hd, Wq = (H + 2 * Hkv) * hd;
  const float eps = cfg["rms_norm_eps"];
  const bool tied = cfg["tie_word_embeddings"];
  RopeScaling sc;
  if (cfg.contains("rope_scaling") && !cfg["rope_scaling"].is_null()) {
    const json& s = cfg["rope_scaling"];
    ASSERT_EQ(s["rope_type"], "llama3");
    sc = {RopeScaling::Type::Llama3, s["factor"], s["low_freq_factor"], s["high_freq_factor"],
          s["original_max_position_embeddings"]};
  }
  const std::vector<std::vector<int32_t>> tok2 = ref["tokens"], tgt2 = ref["targets"];
  const int B = int(tok2.size()), T = int(tok2[0].size()), N = B * T;
  std::vector<int32_t> tokens, targets;
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) tokens.push_back(tok2[b][t]), targets.push_back(tgt2[b][t]);
  const RopeTable tab = rope_table(T, hd, cfg["rope_theta"].get<double>(), sc);
  ASSERT_EQ(tied, W.count("lm_head.weight") == 0);

  auto be = make_cpu_backend();
  auto p = [&](int l, const char* what) { return "model.layers." + std::to_string(l) + "." + what; };
  struct Layer {
    Vec wqkv, wgu, x_in, n1, rstd1, qkv, att, saved, x2, n2, rstd2, gu, a;
  };
  std::vector<Layer> ly(static_cast<size_t>(L));
  for (int l = 0; l < L; ++l) {
    ly[l].wqkv = concat({&W[p(l, "self_attn.q_proj.weight")], &W[p(l, "self_attn.k_proj.weight")],
                         &W[p(l, "self_attn.v_proj.weight")]});
    ly[l].wgu = concat({&W[p(l, "mlp.gate_proj.weight")], &W[p(l, "mlp.up_proj.weight")]});
  }
  const Vec& wte = W["model.embed_tokens.weight"];
  const Vec& wlm = tied ? wte : W["lm_head.weight"];

  // Forward.
  Vec x(size_t(N) * d);
  be->embedding_forward(x.data(), tokens.data(), wte.data(), nullptr, B, T, d);  // no position table
  for (int l = 0; l < L; ++l) {
    Layer& y = ly[l];
    y.x_in = x;
    y.n1.resize(x.size()), y.rstd1.resize(N), y.qkv.resize(size_t(N) * Wq), y.att.resize(size_t(N) * C);
    y.saved.resize(be->attention_saved_bytes(B, T, C, H) / 4);
    be->rmsnorm_forward(y.n1.data(), y.rstd1.data(), x.data(), W[p(l, "input_layernorm.weight")].data(), N, d, eps);
    be->matmul_forward(y.qkv.data(), y.n1.data(), y.wqkv.data(), nullptr, N, d, Wq);
    be->rope_forward(y.qkv.data(), tab.cos.data(), tab.sin.data(), B, T, H + Hkv, hd, Wq);
    be->attention_forward(y.att.data(), y.saved.data(), y.qkv.data(), B, T, C, H, Hkv);
    Vec o(x.size());
    be->matmul_forward(o.data(), y.att.data(), W[p(l, "self_attn.o_proj.weight")].data(), nullptr, N, C, d);
    y.x2.resize(x.size());
    be->residual_forward(y.x2.data(), x.data(), o.data(), x.size());
    y.n2.resize(x.size()), y.rstd2.resize(N), y.gu.resize(size_t(N) * 2 * I), y.a.resize(size_t(N) * I);
    be->rmsnorm_forward(y.n2.data(), y.rstd2.data(), y.x2.data(), W[p(l, "post_attention_layernorm.weight")].data(),
                        N, d, eps);
    be->matmul_forward(y.gu.data(), y.n2.data(), y.wgu.data(), nullptr, N, d, 2 * I);
    be->swiglu_forward(y.a.data(), y.gu.data(), N, I);
    Vec m(x.size());
    be->matmul_forward(m.data(), y.a.data(), W[p(l, "mlp.down_proj.weight")].data(), nullptr, N, I, d);
    be->residual_forward(x.data(), y.x2.data(), m.data(), x.size());
  }
  Vec nf(x.size()), rstdf(N), logits(size_t(N) * V), losses(N);
  be->rmsnorm_forward(nf.data(), rstdf.data(), x.data(), W["model.norm.weight"].data(), N, d, eps);
  be->matmul_forward(logits.data(), nf.data(), wlm.data(), nullptr, N, d, V);
  expect_close(logits, R.at("logits"), 0, 1e-4, "logits");
  Vec dlogits(logits.size());
  be->crossentropy_forward_backward(losses.data(), dlogits.data(), logits.data(), targets.data(), N, V, V, 1.0f);
  double loss = 0;
  int valid = 0;
  for (int n = 0; n < N; ++n)
    if (targets[size_t(n)] >= 0) loss += losses[size_t(n)], ++valid;
  loss /= valid;
  EXPECT_NEAR(loss, ref["loss"].get<double>(), 1e-5) << "loss";

  // Backward.
  std::map<std::string, Vec> G;
  for (const auto& [k, v] : W) G[k].assign(v.size(), 0.f);
  Vec dnf(x.size(), 0.f), dx(x.size(), 0.f), dlm(wlm.size(), 0.f);
  be->matmul_backward(dnf.data(), dlm.data(), nullptr, dlogits.data(), nf.data(), wlm.data(), N, d, V);
  be->rmsnorm_backward(dx.data(), G["model.norm.weight"].data(), dnf.data(), x.data(), W["model.norm.weight"].data(),
                       rstdf.data(), N, d);
  for (int l = L - 1; l >= 0; --l) {
    Layer& y = ly[l];
    // MLP branch: dx holds d(x_out) = d(x2) through the residual and d(m).
    Vec da(y.a.size(), 0.f), dgu(y.gu.size(), 0.f), dn2(x.size(), 0.f), dwgu(y.wgu.size(), 0.f);
    be->matmul_backward(da.data(), G[p(l, "mlp.down_proj.weight")].data(), nullptr, dx.data(), y.a.data(),
                        W[p(l, "mlp.down_proj.weight")].data(), N, I, d);
    be->swiglu_backward(dgu.data(), da.data(), y.gu.data(), N, I);
    be->matmul_backward(dn2.data(), dwgu.data(), nullptr, dgu.data(), y.n2.data(), y.wgu.data(), N, d, 2 * I);
    be->rmsnorm_backward(dx.data(), G[p(l, "post_attention_layernorm.weight")].data(), dn2.data(), y.x2.data(),
                         W[p(l, "post_attention_layernorm.weight")].data(), y.rstd2.data(), N, d);
    // Attention branch: dx now holds d(x2) = d(x_in) through the residual and d(o).
    Vec datt(y.att.size(), 0.f), dqkv(y.qkv.size(), 0.f), dn1(x.size(), 0.f), dwqkv(y.wqkv.size(), 0.f);
    be->matmul_backward(datt.data(), G[p(l, "self_attn.o_proj.weight")].data(), nullptr, dx.data(), y.att.data(),
                        W[p(l, "self_attn.o_proj.weight")].data(), N, C, d);
    be->attention_backward(dqkv.data(), datt.data(), y.qkv.data(), y.saved.data(), B, T, C, H, Hkv);
    be->rope_backward(dqkv.data(), tab.cos.data(), tab.sin.data(), B, T, H + Hkv, hd, Wq);
    be->matmul_backward(dn1.data(), dwqkv.data(), nullptr, dqkv.data(), y.n1.data(), y.wqkv.data(), N, d, Wq);
    be->rmsnorm_backward(dx.data(), G[p(l, "input_layernorm.weight")].data(), dn1.data(), y.x_in.data(),
                         W[p(l, "input_layernorm.weight")].data(), y.rstd1.data(), N, d);
    auto split = [&](const Vec& src, size_t off, const std::string& k) {
      std::memcpy(G[k].data(), src.data() + off, G[k].size() * 4);
      return off + G[k].size();
    };
    size_t off = split(dwqkv, 0, p(l, "self_attn.q_proj.weight"));
    off = split(dwqkv, off, p(l, "self_attn.k_proj.weight"));
    split(dwqkv, off, p(l, "self_attn.v_proj.weight"));
    split(dwgu, split(dwgu, 0, p(l, "mlp.gate_proj.weight")), p(l, "mlp.up_proj.weight"));
  }
  be->embedding_backward(G["model.embed_tokens.weight"].data(), nullptr, dx.data(), tokens.data(), B, T, d);
  if (tied)
    be->accumulate(G["model.embed_tokens.weight"].data(), dlm.data(), dlm.size());
  else
    G["lm_head.weight"] = dlm;

  const json& ah = ref["adamw"];
  AdamWHyper h;
  h.lr = ah["lr"], h.beta1 = ah["beta1"], h.beta2 = ah["beta2"], h.eps = ah["eps"], h.weight_decay = ah["weight_decay"];
  h.step = 1;
  for (const std::string& k : ref["parameters"].get<std::vector<std::string>>()) {
    ASSERT_TRUE(G.count(k) && R.count("grad." + k)) << k;
    const Vec& want = R.at("grad." + k);
    expect_close(G[k], want, 1e-4, 1e-7, "grad " + k);
    // One AdamW step from fresh moments: each element moves by about lr · sign(g) (plus decay), so
    // it is insensitive to the gradient's rounding except where |g| is within that rounding of 0.
    Vec pnew = W[k], m(pnew.size(), 0.f), v(pnew.size(), 0.f);
    be->adamw_step(pnew.data(), G[k].data(), m.data(), v.data(), pnew.size(), h);
    const Vec& pref = R.at("adamw." + k);
    double gmax = 0;
    for (float g : want) gmax = std::max(gmax, double(std::abs(g)));
    size_t bad = 0;
    for (size_t i = 0; i < pnew.size(); ++i) {
      const double diff = std::abs(double(pnew[i]) - pref[i]);
      const bool clear = std::abs(want[i]) > 1e-3 * gmax + 1e-6;
      if (!(diff <= (clear ? 1e-6 + 1e-5 * std::abs(pref[i]) : 2.0 * h.lr + 1e-6))) ++bad;
    }
    EXPECT_EQ(bad, 0u) << "adamw " << k;
  }
}

TEST(LlamaOpsAgainstTransformers, Tiny) { run_case("llama_tiny"); }
TEST(LlamaOpsAgainstTransformers, TiedOneKvHead) { run_case("llama_tiny_tied"); }
TEST(LlamaOpsAgainstTransformers, Llama3RopeScaling) { run_case("llama_tiny_rope_llama3"); }

}  // namespace
}  // namespace zt
