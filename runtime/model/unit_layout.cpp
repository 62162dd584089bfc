// Builds the per-unit tensor layouts of GPT-2 and Llama and each family's initialisation recipe.
#include "runtime/model/unit_layout.h"

#include <cmath>
#include <stdexcept>

namespace zt {

const TensorView& UnitLayout::tensor(const std::string& n) const {
  for (const auto& t : tensors)
    if (t.name == n) return t;
  throw std::out_of_range("unit '" + name + "' has no tensor named '" + n + "'");
}

const char* unit_kind_name(UnitKind k) {
  switch (k) {
    case UnitKind::Embedding: return "embedding";
    case UnitKind::Block: return "block";
    case UnitKind::Head: return "head";
  }
  return "?";
}

namespace {

void add(UnitLayout& u, const std::string& name, std::vector<int64_t> shape, bool decay, float std_dev,
         float value = 0.f) {
  TensorView t;
  t.name = name;
  t.offset = u.numel;
  t.numel = 1;
  for (auto d : shape) t.numel *= d;
  t.shape = std::move(shape);
  t.decay = decay;
  t.init_std = std_dev;
  t.init_value = value;
  u.numel += t.numel;
  u.tensors.push_back(std::move(t));
}

// Llama's block, in transformers' names: input_layernorm (ln1_w); q_proj, k_proj and v_proj stacked
// row-wise (qkv_w, [(H + 2 Hkv) hd, C]); o_proj (attproj_w, [C, H hd]); post_attention_layernorm
// (ln2_w); gate_proj and up_proj stacked (gate_up_w, [2 I, C], gate rows first); down_proj (down_w).
// Every matrix N(0, initializer_range), no residual scaling; norms 1.
void add_llama_block(UnitLayout& b, const ModelConfig& cfg) {
  const int64_t C = cfg.dim, I = cfg.intermediate;
  const float s = cfg.init_std;
  add(b, "ln1_w", {C}, false, 0.f, 1.f);
  add(b, "qkv_w", {cfg.qkv_rows(), C}, true, s);
  add(b, "attproj_w", {C, cfg.attention_width()}, true, s);
  add(b, "ln2_w", {C}, false, 0.f, 1.f);
  add(b, "gate_up_w", {2 * I, C}, true, s);
  add(b, "down_w", {C, I}, true, s);
}

void add_gpt2_block(UnitLayout& b, const ModelConfig& cfg) {
  const int64_t C = cfg.dim;
  const float s = cfg.init_std;
  // GPT-2: residual projections are scaled by 1/sqrt(2L) so the residual stream's variance does
  // not grow with depth.
  const float resid_std = s / std::sqrt(2.0f * float(cfg.layers));
  add(b, "ln1_w", {C}, false, 0.f, 1.f);
  add(b, "ln1_b", {C}, false, 0.f);
  add(b, "qkv_w", {3 * C, C}, true, s);
  add(b, "qkv_b", {3 * C}, false, 0.f);
  add(b, "attproj_w", {C, C}, true, resid_std);
  add(b, "attproj_b", {C}, false, 0.f);
  add(b, "ln2_w", {C}, false, 0.f, 1.f);
  add(b, "ln2_b", {C}, false, 0.f);
  add(b, "fc_w", {4 * C, C}, true, s);
  add(b, "fc_b", {4 * C}, false, 0.f);
  add(b, "fcproj_w", {C, 4 * C}, true, resid_std);
  add(b, "fcproj_b", {C}, false, 0.f);
}

}  // namespace

std::vector<UnitLayout> build_unit_layouts(const ModelConfig& cfg) {
  const int64_t C = cfg.dim, V = cfg.vocab, T = cfg.seq_len;
  const float s = cfg.init_std;
  std::vector<UnitLayout> units;

  UnitLayout emb;
  emb.kind = UnitKind::Embedding;
  emb.index = 0;
  emb.name = "embedding";
  add(emb, "wte", {V, C}, true, s);
  if (!cfg.llama()) add(emb, "wpe", {T, C}, true, s);
  units.push_back(std::move(emb));

  for (int l = 0; l < cfg.layers; ++l) {
    UnitLayout b;
    b.kind = UnitKind::Block;
    b.index = l + 1;
    b.name = "block" + std::to_string(l);
    if (cfg.llama())
      add_llama_block(b, cfg);
    else
      add_gpt2_block(b, cfg);
    units.push_back(std::move(b));
  }

  UnitLayout head;
  head.kind = UnitKind::Head;
  head.index = cfg.layers + 1;
  head.name = "head";
  add(head, "lnf_w", {C}, false, 0.f, 1.f);
  if (!cfg.llama()) add(head, "lnf_b", {C}, false, 0.f);
  if (!cfg.tied_embeddings) add(head, "lm_head_w", {V, C}, true, s);
  units.push_back(std::move(head));
  return units;
}

}  // namespace zt
