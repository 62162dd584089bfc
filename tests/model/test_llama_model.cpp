// The Llama model class (runtime/model/llama.h) against transformers' own LlamaForCausalLM on the
// fixtures of tests/data/llama: each fixture's preset built, its weights loaded into the units, its
// batch walked forward and backward; logits, loss and every parameter gradient compared. Then the
// model's own properties: checkpointing recomputes bitwise the same gradients, grouped-query
// attention equals multi-head attention with replicated key/value heads, gradients accumulate over
// calls, the factory picks the class by family, and activation_bytes_for counts what it allocates.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "runtime/model/causal_lm.h"
#include "runtime/model/gpt2.h"
#include "runtime/model/llama.h"
#include "tests/model/llama_fixture.h"
#include "tests/model/model_test_util.h"

namespace zt {
namespace {

using test::FloatVec;

std::string fixture_dir(const std::string& name) { return std::string(ZT_LLAMA_FIXTURES_DIR) + "/" + name; }

// The preset of each fixture ("llama_tiny" -> "llama-tiny"), checked field by field against its config.json.
ModelConfig fixture_preset(const std::string& name, const test::LlamaFixture& f) {
  std::string preset = name;
  std::replace(preset.begin(), preset.end(), '_', '-');
  const auto m = model_preset(preset);
  EXPECT_TRUE(m.has_value()) << preset;
  const nlohmann::json& c = f.config;
  EXPECT_TRUE(m->llama());
  EXPECT_EQ(m->vocab, c["vocab_size"].get<int>());
  EXPECT_EQ(m->dim, c["hidden_size"].get<int>());
  EXPECT_EQ(m->layers, c["num_hidden_layers"].get<int>());
  EXPECT_EQ(m->heads, c["num_attention_heads"].get<int>());
  EXPECT_EQ(m->kv_head_count(), c["num_key_value_heads"].get<int>());
  EXPECT_EQ(m->head_width(), c["head_dim"].get<int>());
  EXPECT_EQ(m->intermediate, c["intermediate_size"].get<int>());
  EXPECT_EQ(m->norm_eps, c["rms_norm_eps"].get<float>());
  EXPECT_EQ(m->rope_theta, c["rope_theta"].get<double>());
  EXPECT_EQ(m->tied_embeddings, c["tie_word_embeddings"].get<bool>());
  EXPECT_GE(m->seq_len, f.T);
  return *m;
}

// transformers' tensors that make up each of our tensors, stacked row-wise in this order.
std::vector<std::string> hf_parts(const UnitLayout& u, const std::string& ours) {
  if (u.kind == UnitKind::Embedding) return {"model.embed_tokens.weight"};
  if (u.kind == UnitKind::Head) return {ours == "lnf_w" ? "model.norm.weight" : "lm_head.weight"};
  const std::string p = "model.layers." + std::to_string(u.index - 1) + ".";
  if (ours == "ln1_w") return {p + "input_layernorm.weight"};
  if (ours == "qkv_w") return {p + "self_attn.q_proj.weight", p + "self_attn.k_proj.weight", p + "self_attn.v_proj.weight"};
  if (ours == "attproj_w") return {p + "self_attn.o_proj.weight"};
  if (ours == "ln2_w") return {p + "post_attention_layernorm.weight"};
  if (ours == "gate_up_w") return {p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight"};
  if (ours == "down_w") return {p + "mlp.down_proj.weight"};
  ADD_FAILURE() << "no transformers name for " << u.name << "." << ours;
  return {};
}

void load_fixture_weights(const CausalLM& model, const std::map<std::string, FloatVec>& W, test::UnitBuffers& buf) {
  for (int u = 0; u < model.num_units(); ++u)
    for (const TensorView& t : model.layout(u).tensors) {
      int64_t at = t.offset;
      for (const std::string& k : hf_parts(model.layout(u), t.name)) {
        ASSERT_TRUE(W.count(k)) << k;
        const FloatVec& v = W.at(k);
        std::memcpy(buf.p(u) + at, v.data(), v.size() * 4);
        at += int64_t(v.size());
      }
      ASSERT_EQ(at, t.offset + t.numel) << t.name;
    }
}

// Our gradients under transformers' names (the stacked tensors split back).
std::map<std::string, FloatVec> gradients_by_hf_name(const CausalLM& model, const std::map<std::string, FloatVec>& W,
                                                     test::UnitBuffers& buf) {
  std::map<std::string, FloatVec> G;
  for (int u = 0; u < model.num_units(); ++u)
    for (const TensorView& t : model.layout(u).tensors) {
      const float* at = buf.g(u) + t.offset;
      for (const std::string& k : hf_parts(model.layout(u), t.name)) {
        const size_t n = W.at(k).size();
        G[k].assign(at, at + n);
        at += n;
      }
    }
  return G;
}

// The first vocab columns of the kept logits [N, padded_vocab]; the padding columns must be 0.
FloatVec real_logits(const CausalLM& model, int N) {
  const int V = model.config().vocab, Vp = model.config().padded_vocab();
  const float* l = static_cast<const float*>(model.logits());
  FloatVec out;
  int nonzero_padding = 0;
  for (int n = 0; n < N; ++n) {
    out.insert(out.end(), l + size_t(n) * Vp, l + size_t(n) * Vp + V);
    for (int v = V; v < Vp; ++v) nonzero_padding += l[size_t(n) * Vp + v] != 0.f;
  }
  EXPECT_EQ(nonzero_padding, 0);
  return out;
}

void run_against_transformers(const std::string& name) {
  SCOPED_TRACE(name);
  const test::LlamaFixture f = test::load_llama_fixture(fixture_dir(name));
  const ModelConfig m = fixture_preset(name, f);
  auto be = make_cpu_backend();
  auto model = make_causal_lm(m, *be, ModelRunOptions{f.B, false, /*keep_logits=*/true});
  ASSERT_NE(dynamic_cast<Llama*>(model.get()), nullptr);
  test::UnitBuffers buf(*be, *model);
  load_fixture_weights(*model, f.weights, buf);
  model->set_batch(f.tokens.data(), f.targets.data(), f.B, f.T);
  const float loss = forward_backward(*model, buf.params, buf.grads);
  be->synchronize();
  test::expect_close(real_logits(*model, f.B * f.T), f.outputs.at("logits"), 0, 1e-4, "logits");
  EXPECT_NEAR(loss, f.reference["loss"].get<double>(), 1e-5) << "loss";
  const auto G = gradients_by_hf_name(*model, f.weights, buf);
  const auto names = f.reference["parameters"].get<std::vector<std::string>>();
  EXPECT_EQ(names.size(), G.size());
  for (const std::string& k : names) {
    ASSERT_TRUE(G.count(k) && f.outputs.count("grad." + k)) << k;
    test::expect_close(G.at(k), f.outputs.at("grad." + k), 1e-4, 1e-7, "grad " + k);
  }
}

TEST(LlamaModelAgainstTransformers, Tiny) { run_against_transformers("llama_tiny"); }
TEST(LlamaModelAgainstTransformers, TiedOneKvHeadShorterBatch) { run_against_transformers("llama_tiny_tied"); }
TEST(LlamaModelAgainstTransformers, Llama3RopeScaling) { run_against_transformers("llama_tiny_rope_llama3"); }

// One walk of the fixture's batch from zeroed gradients: the loss and every unit's gradient.
struct Walk {
  float loss = 0;
  std::vector<FloatVec> grads;
};
Walk walk(const ModelConfig& m, const std::map<std::string, FloatVec>& W, const test::LlamaFixture& f,
          bool checkpoint) {
  auto be = make_cpu_backend();
  Llama model(m, *be, ModelRunOptions{f.B, checkpoint});
  test::UnitBuffers buf(*be, model);
  load_fixture_weights(model, W, buf);
  model.set_batch(f.tokens.data(), f.targets.data(), f.B, f.T);
  Walk w;
  w.loss = forward_backward(model, buf.params, buf.grads);
  be->synchronize();
  for (int u = 0; u < model.num_units(); ++u) w.grads.emplace_back(buf.g(u), buf.g(u) + buf.sizes[size_t(u)]);
  return w;
}

TEST(LlamaModel, CheckpointingRecomputesBitwiseTheSameGradients) {
  for (const char* name : {"llama_tiny", "llama_tiny_tied"}) {
    SCOPED_TRACE(name);
    const test::LlamaFixture f = test::load_llama_fixture(fixture_dir(name));
    const ModelConfig m = fixture_preset(name, f);
    const Walk kept = walk(m, f.weights, f, false), recomputed = walk(m, f.weights, f, true);
    EXPECT_EQ(kept.loss, recomputed.loss);
    ASSERT_EQ(kept.grads.size(), recomputed.grads.size());
    for (size_t u = 0; u < kept.grads.size(); ++u)
      EXPECT_EQ(0, std::memcmp(kept.grads[u].data(), recomputed.grads[u].data(), kept.grads[u].size() * 4))
          << "unit " << u;
  }
}

// Grouped-query attention with Hkv = 2 for H = 4 is multi-head attention (Hkv = H) whose key and
// value heads are the kv heads repeated per query group; the MHA model's gradients of the copies
// add up to the GQA model's. Both paths of the attention (NKV < NH and NKV == NH) run here.
TEST(LlamaModel, GroupedQueryAttentionEqualsMultiHeadWithRepeatedKvHeads) {
  const test::LlamaFixture f = test::load_llama_fixture(fixture_dir("llama_tiny"));
  const ModelConfig gqa = fixture_preset("llama_tiny", f);
  ModelConfig mha = gqa;
  mha.kv_heads = gqa.heads;
  const int H = gqa.heads, Hkv = gqa.kv_head_count(), hd = gqa.head_width(), C = gqa.dim, group = H / Hkv;
  ASSERT_GT(group, 1);
  const size_t head_rows = size_t(hd) * C;  // one head's rows of k_proj or v_proj
  auto repeat = [&](const FloatVec& w) {
    FloatVec out;
    for (int h = 0; h < H; ++h) out.insert(out.end(), w.begin() + (h / group) * head_rows, w.begin() + (h / group + 1) * head_rows);
    return out;
  };
  std::map<std::string, FloatVec> W = f.weights;
  for (int l = 0; l < gqa.layers; ++l)
    for (const char* kv : {"k_proj", "v_proj"}) {
      const std::string k = "model.layers." + std::to_string(l) + ".self_attn." + kv + ".weight";
      W[k] = repeat(f.weights.at(k));
    }
  const Walk a = walk(gqa, f.weights, f, false), b = walk(mha, W, f, false);
  const std::vector<UnitLayout> layouts_a = build_unit_layouts(gqa), layouts_b = build_unit_layouts(mha);
  EXPECT_NEAR(a.loss, b.loss, 1e-6);
  for (size_t u = 0; u < a.grads.size(); ++u) {
    if (u == 0 || u + 1 == a.grads.size()) {  // embedding and head: the same tensors
      test::expect_close(b.grads[u], a.grads[u], 1e-5, 1e-7, "unit " + std::to_string(u));
      continue;
    }
    // blocks: fold the MHA's qkv gradient rows back onto the GQA's (q as is, k and v summed per group)
    const UnitLayout& la = layouts_a[u];
    const UnitLayout& lb = layouts_b[u];
    FloatVec folded(a.grads[u].size(), 0.f);
    for (const TensorView& t : la.tensors) {
      const TensorView& tb = lb.tensor(t.name);
      const float* src = b.grads[u].data() + tb.offset;
      float* dst = folded.data() + t.offset;
      if (t.name != "qkv_w") {
        std::copy(src, src + t.numel, dst);
        continue;
      }
      std::copy(src, src + size_t(H) * head_rows, dst);  // q
      for (int part = 0; part < 2; ++part)               // k, then v
        for (int h = 0; h < H; ++h)
          for (size_t i = 0; i < head_rows; ++i)
            dst[size_t(H + part * Hkv + h / group) * head_rows + i] += src[size_t(H + part * H + h) * head_rows + i];
    }
    test::expect_close(folded, a.grads[u], 1e-5, 1e-7, "block unit " + std::to_string(u));
  }
}

// Two micro-batches walked without zeroing leave the sum of their separate gradients.
TEST(LlamaModel, GradientsAccumulateOverCalls) {
  const test::LlamaFixture f = test::load_llama_fixture(fixture_dir("llama_tiny_tied"));
  const ModelConfig m = fixture_preset("llama_tiny_tied", f);
  auto be = make_cpu_backend();
  Llama model(m, *be, ModelRunOptions{f.B});
  test::UnitBuffers buf(*be, model);
  load_fixture_weights(model, f.weights, buf);
  std::vector<int32_t> tokens2, targets2;
  test::random_batch(f.B, f.T, m.vocab, 7, tokens2, targets2);
  auto grads = [&] {
    be->synchronize();
    std::vector<FloatVec> g;
    for (int u = 0; u < model.num_units(); ++u) g.emplace_back(buf.g(u), buf.g(u) + buf.sizes[size_t(u)]);
    return g;
  };
  model.set_batch(f.tokens.data(), f.targets.data(), f.B, f.T);
  forward_backward(model, buf.params, buf.grads);
  const auto first = grads();
  buf.zero_grads();
  model.set_batch(tokens2.data(), targets2.data(), f.B, f.T);
  forward_backward(model, buf.params, buf.grads);
  const auto second = grads();
  buf.zero_grads();
  model.set_batch(f.tokens.data(), f.targets.data(), f.B, f.T);
  forward_backward(model, buf.params, buf.grads);
  model.set_batch(tokens2.data(), targets2.data(), f.B, f.T);
  forward_backward(model, buf.params, buf.grads);
  const auto both = grads();
  for (size_t u = 0; u < both.size(); ++u) {
    FloatVec sum(first[u].size());
    for (size_t i = 0; i < sum.size(); ++i) sum[i] = first[u][i] + second[u][i];
    double mx = 0;
    for (float x : first[u]) mx = std::max(mx, double(std::abs(x)));
    ASSERT_GT(mx, 0.0) << "unit " << u << " has no gradient";
    test::expect_close(both[u], sum, 1e-6, 1e-9, "unit " + std::to_string(u));
  }
}

TEST(LlamaModel, FactoryPicksTheClassByFamily) {
  auto be = make_cpu_backend();
  auto gpt2 = make_causal_lm(*model_preset("tiny"), *be);
  auto llama = make_causal_lm(*model_preset("llama-tiny"), *be);
  EXPECT_NE(dynamic_cast<GPT2*>(gpt2.get()), nullptr);
  EXPECT_NE(dynamic_cast<Llama*>(llama.get()), nullptr);
  EXPECT_FALSE(llama->needs_embedding_unit(llama->num_units() - 1));  // untied
  auto tied = make_causal_lm(*model_preset("llama-tiny-tied"), *be);
  EXPECT_TRUE(tied->needs_embedding_unit(tied->num_units() - 1));
  EXPECT_FALSE(tied->needs_embedding_unit(0));
  ModelConfig bad = *model_preset("llama-tiny");
  bad.heads = 3;  // kv heads 2 do not divide 3
  EXPECT_THROW(Llama(bad, *be), std::invalid_argument);
  EXPECT_THROW(Llama(*model_preset("tiny"), *be), std::invalid_argument);
}

TEST(LlamaModel, ActivationBytesForCountsWhatItAllocates) {
  auto be = make_cpu_backend();
  for (const char* preset : {"llama-tiny", "llama-tiny-tied", "llama-tiny-rope-llama3"})
    for (int batch : {1, 3})
      for (bool ck : {false, true})
        for (bool keep : {false, true}) {
          const ModelConfig m = *model_preset(preset);
          const ModelRunOptions o{batch, ck, keep};
          const size_t want = causal_lm_activation_bytes_for(
              m, o, 4, be->attention_saved_bytes(batch, m.seq_len, int(m.attention_width()), m.heads));
          const Llama model(m, *be, o);  // throws if its allocations differ from its own formula
          EXPECT_EQ(model.activation_bytes(), want) << preset << " B=" << batch << " ck=" << ck << " keep=" << keep;
        }
  // checkpointing keeps one block's set instead of L
  const ModelConfig m = *model_preset("llama-tiny");
  EXPECT_LT(causal_lm_activation_bytes_for(m, {1, true, false}, 4, 1000),
            causal_lm_activation_bytes_for(m, {1, false, false}, 4, 1000));
  EXPECT_EQ(causal_lm_activation_bytes_for(m, {1, false, false}, 4, 2000),
            causal_lm_activation_bytes_for(m, {1, false, false}, 4, 1000) + size_t(m.layers) * 1000);
}

}  // namespace
}  // namespace zt
