// Hugging Face GPT-2 names, config.json, and the reader used by --init-from.
#include "runtime/checkpoint/hf_gpt2.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/half_float.h"
#include "runtime/checkpoint/unit_import.h"
#include "runtime/checkpoint/file_io.h"
#include "runtime/checkpoint/manifest.h"

namespace zt::ckpt {

namespace {

const std::string kFixShape = "give a GPT-2 model.safetensors in the Hugging Face layout whose shape matches this run's model";

bool is_conv1d(const std::string& n) { return n == "qkv_w" || n == "attproj_w" || n == "fc_w" || n == "fcproj_w"; }

// The tensors with one row per token: a file may hold fewer rows than the model (padded at import).
bool is_vocab_rows(const TensorView& t) { return t.name == "wte" || t.name == "lm_head_w"; }

}  // namespace

HfName hf_gpt2_name(const UnitLayout& unit, const TensorView& t) {
  static const std::pair<const char*, const char*> kBlock[] = {
      {"ln1_w", "ln_1.weight"},          {"ln1_b", "ln_1.bias"},          {"qkv_w", "attn.c_attn.weight"},
      {"qkv_b", "attn.c_attn.bias"},     {"attproj_w", "attn.c_proj.weight"}, {"attproj_b", "attn.c_proj.bias"},
      {"ln2_w", "ln_2.weight"},          {"ln2_b", "ln_2.bias"},          {"fc_w", "mlp.c_fc.weight"},
      {"fc_b", "mlp.c_fc.bias"},         {"fcproj_w", "mlp.c_proj.weight"}, {"fcproj_b", "mlp.c_proj.bias"}};
  if (unit.kind == UnitKind::Embedding) return {"transformer." + t.name + ".weight", false};
  if (unit.kind == UnitKind::Head) {
    if (t.name == "lm_head_w") return {"lm_head.weight", false};
    return {std::string("transformer.ln_f.") + (t.name == "lnf_w" ? "weight" : "bias"), false};
  }
  for (const auto& [ours, hf] : kBlock)
    if (t.name == ours) return {"transformer.h." + std::to_string(unit.index - 1) + "." + hf, is_conv1d(t.name)};
  throw std::invalid_argument("no Hugging Face GPT-2 name for " + unit.name + "." + t.name);
}

std::vector<int64_t> hf_shape(const TensorView& t, bool transpose) {
  if (transpose && t.shape.size() == 2) return {t.shape[1], t.shape[0]};
  return t.shape;
}

nlohmann::ordered_json hf_gpt2_config(const ModelConfig& m) {
  return {{"activation_function", "gelu_new"},
          {"architectures", {"GPT2LMHeadModel"}},
          {"attn_pdrop", 0.0},
          {"bos_token_id", m.vocab - 1},
          {"embd_pdrop", 0.0},
          {"eos_token_id", m.vocab - 1},
          {"initializer_range", 0.02},
          {"layer_norm_epsilon", 1e-5},
          {"model_type", "gpt2"},
          {"n_ctx", m.seq_len},
          {"n_embd", m.dim},
          {"n_head", m.heads},
          {"n_inner", nullptr},
          {"n_layer", m.layers},
          {"n_positions", m.seq_len},
          {"resid_pdrop", 0.0},
          {"scale_attn_weights", true},
          {"tie_word_embeddings", m.tied_embeddings},
          {"torch_dtype", "float32"},
          {"use_cache", true},
          {"vocab_size", m.vocab}};
}

void to_f32(StDType t, const void* src, int64_t n, float* dst) {
  switch (t) {
    case StDType::F32: std::memcpy(dst, src, size_t(n) * 4); return;
    case StDType::BF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_bits_to_f32(static_cast<const uint16_t*>(src)[i]);
      return;
    case StDType::F16:
      for (int64_t i = 0; i < n; ++i) dst[i] = f16_bits_to_f32(static_cast<const uint16_t*>(src)[i]);
      return;
    case StDType::F64:
      for (int64_t i = 0; i < n; ++i) dst[i] = float(static_cast<const double*>(src)[i]);
      return;
    default: throw std::invalid_argument(std::string("cannot convert ") + st_dtype_name(t) + " to fp32");
  }
}

std::unique_ptr<HfGpt2Reader> HfGpt2Reader::open(const std::string& path, const std::vector<UnitLayout>& units,
                                                 const ModelConfig& model, Diagnostics& d) {
  const size_t before = d.error_count();
  auto file = SafetensorsFile::open(path, d, kFixShape);
  if (!file) return nullptr;
  std::unique_ptr<HfGpt2Reader> r(new HfGpt2Reader());
  r->units_ = &units;
  r->prefix_ = file->find("transformer.wte.weight") ? "transformer." : "";
  const auto fmt = file->metadata().find("format");
  r->ours_ = fmt != file->metadata().end() && fmt->second == "zerotrain-weights";
  for (const auto& u : units)
    for (const auto& t : u.tensors) {
      const HfName h = r->source(u, t);
      const std::string& name = h.name;
      const StTensor* st = file->find(name);
      const auto want = hf_shape(t, h.transpose);
      if (!st) {
        d.error(path + " (tensor \"" + name + "\")", "", "missing: this run's " + u.name + "." + t.name + " " +
                                                              shape_text(t.shape) + " comes from it",
                t.name == "lm_head_w" ? "the file has tied embeddings: train with them (drop --untied-embeddings)" : kFixShape);
        continue;
      }
      // A vocabulary smaller than the model's (HF's 50257 into a model of 50304): the rows past it are
      // added, as zeros. Both tensors with vocabulary rows must agree on the count.
      const bool fewer_rows = is_vocab_rows(t) && st->shape.size() == 2 && want.size() == 2 && st->shape[1] == want[1] &&
                              st->shape[0] >= 1 && st->shape[0] < want[0];
      if (fewer_rows && r->file_vocab_ != 0 && r->file_vocab_ != st->shape[0])
        d.error(path + " (tensor \"" + name + "\")", shape_text(st->shape),
                "has " + std::to_string(st->shape[0]) + " vocabulary rows, the file's wte " + std::to_string(r->file_vocab_),
                kFixShape);
      else if (fewer_rows)
        r->file_vocab_ = st->shape[0];
      else if (st->shape != want)
        d.error(path + " (tensor \"" + name + "\")", shape_text(st->shape),
                "expected " + shape_text(want) + " for this run's model (" + model_text(model) + ")" +
                    (is_vocab_rows(t) && st->shape.size() == 2 && st->shape[0] > want[0]
                         ? ": the file's vocabulary is larger than the model's (a smaller one is padded with zero rows)"
                         : ""),
                is_vocab_rows(t) && st->shape.size() == 2 && st->shape[0] > want[0]
                    ? "run with --vocab " + std::to_string(st->shape[0]) + " or more"
                    : kFixShape);
      if (st->dtype != StDType::F32 && st->dtype != StDType::F16 && st->dtype != StDType::BF16 && st->dtype != StDType::F64)
        d.error(path + " (tensor \"" + name + "\")", st_dtype_name(st->dtype), "expected a floating-point dtype", kFixShape);
    }
  for (const auto& t : file->tensors()) {
    const std::string& n = t.name;
    const bool mask = n.size() > 10 && (n.rfind(".attn.bias") == n.size() - 10 || n.rfind(".attn.masked_bias") == n.size() - 17);
    if (mask) continue;
    if (n == "lm_head.weight" && model.tied_embeddings) continue;  // a copy of wte in tied models
    bool known = false;
    for (const auto& u : units)
      for (const auto& tv : u.tensors) known = known || r->source(u, tv).name == n;
    if (!known)
      d.error(path + " (tensor \"" + n + "\")", shape_text(t.shape), "not part of this run's GPT-2 (" + model_text(model) + ")",
              kFixShape);
  }
  // config.json beside it: what the weights alone cannot tell (heads, activation, epsilon).
  const std::string dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/'));
  const std::string cfg_path = join_path(dir, "config.json");
  if (path_exists(cfg_path)) {
    nlohmann::json c;
    try {
      c = nlohmann::json::parse(read_small_file(cfg_path));
    } catch (const std::exception& e) {
      d.error(cfg_path, "", std::string("not valid JSON: ") + e.what(), "fix or remove it");
      return nullptr;
    }
    auto num = [&](const char* k, double want) {
      if (c.contains(k) && c[k].is_number() && std::abs(c[k].get<double>() - want) > 1e-12 * std::abs(want))
        d.error(cfg_path + ": " + k, c[k].dump(), "this run's model has " + nlohmann::json(want).dump(),
                std::string("run with the model the weights were made for (") + k + ")");
    };
    num("n_head", model.heads);
    num("n_layer", model.layers);
    num("n_embd", model.dim);
    num("vocab_size", r->file_vocab_ ? double(r->file_vocab_) : double(model.vocab));
    num("n_positions", model.seq_len);
    num("layer_norm_epsilon", 1e-5);
    if (c.contains("activation_function") && c["activation_function"] != "gelu_new")
      d.error(cfg_path + ": activation_function", c["activation_function"].dump(),
              "zerotrain's GPT-2 uses the tanh GELU (\"gelu_new\"); these weights were trained with another", "");
    if (c.contains("tie_word_embeddings") && c["tie_word_embeddings"].is_boolean() &&
        c["tie_word_embeddings"].get<bool>() != model.tied_embeddings)
      d.error(cfg_path + ": tie_word_embeddings", c["tie_word_embeddings"].dump(),
              std::string("this run's model has ") + (model.tied_embeddings ? "tied" : "untied") + " embeddings",
              model.tied_embeddings ? "add --untied-embeddings" : "drop --untied-embeddings");
  }
  if (d.error_count() != before) return nullptr;
  if (r->file_vocab_ == 0) r->file_vocab_ = model.vocab;
  r->model_vocab_ = model.vocab;
  // A zerotrain export of imported weights carries the vocabulary they were imported with.
  if (r->ours_) {
    r->hf_vocab_ = recorded_hf_vocab(*file, path, model.vocab, kFixShape, d);
    if (r->hf_vocab_ < 0) return nullptr;
  } else if (r->file_vocab_ < model.vocab) {
    r->hf_vocab_ = r->file_vocab_;
  }
  r->file_ = std::move(file);
  return r;
}

HfName HfGpt2Reader::source(const UnitLayout& u, const TensorView& t) const {
  if (ours_) return {u.name + "." + t.name, false};
  HfName h = hf_gpt2_name(u, t);
  if (h.name.compare(0, 12, "transformer.") == 0) h.name = prefix_ + h.name.substr(12);
  return h;
}

void HfGpt2Reader::read_unit(int u, float* out) const {
  const UnitLayout& unit = units_->at(size_t(u));
  std::vector<char> raw;
  std::vector<float> tmp;
  for (const auto& t : unit.tensors) {
    const HfName h = source(unit, t);
    const StTensor& st = *file_->find(h.name);
    raw.resize(size_t(st.bytes()));
    file_->read(st, 0, raw.size(), raw.data());
    if (!h.transpose) {
      const int64_t n = st.numel();  // fewer than t.numel: vocabulary rows the file lacks, zero
      to_f32(st.dtype, raw.data(), n, out + t.offset);
      std::fill(out + t.offset + n, out + t.offset + t.numel, 0.0f);
      continue;
    }
    tmp.resize(size_t(t.numel));
    to_f32(st.dtype, raw.data(), t.numel, tmp.data());
    const int64_t rows = t.shape[0], cols = t.shape[1];  // ours [out, in]; HF [in, out]
    float* dst = out + t.offset;
    for (int64_t o = 0; o < rows; ++o)
      for (int64_t i = 0; i < cols; ++i) dst[o * cols + i] = tmp[size_t(i * rows + o)];
  }
}

std::string hf_gpt2_weights_file(const std::string& path) {
  return is_directory(path) ? join_path(path, "model.safetensors") : path;
}

int64_t recorded_hf_vocab(const SafetensorsFile& file, const std::string& path, int model_vocab, const std::string& fix,
                          Diagnostics& d) {
  const auto hv = file.metadata().find("zt.hf_vocab");
  if (hv == file.metadata().end()) return 0;
  int64_t v = -1;
  try {
    size_t used = 0;
    v = std::stoll(hv->second, &used);
    if (used != hv->second.size()) v = -1;
  } catch (const std::exception&) {
  }
  if (v >= 1 && v <= model_vocab) return v;
  d.error(path + " (header key \"__metadata__.zt.hf_vocab\")", hv->second,
          "expected a vocabulary size in [1, " + std::to_string(model_vocab) + "]", fix);
  return -1;
}

int64_t init_from_hf(ShardedState& state, RankExchange& ex, const std::string& path, const ModelConfig& model) {
  Diagnostics d;
  auto reader = HfGpt2Reader::open(path, state.units(), model, d);
  import_units(state, ex, path, reader != nullptr, d, [&](int u, float* values) { reader->read_unit(u, values); });
  return reader->hf_vocab();
}

}  // namespace zt::ckpt
