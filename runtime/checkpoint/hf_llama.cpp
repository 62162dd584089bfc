// Hugging Face Llama names, config.json both ways, the reader used by --init-from and the writer
// used by export --format hf.
#include "runtime/checkpoint/hf_llama.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

#include "base/half_float.h"
#include "runtime/checkpoint/unit_import.h"
#include "runtime/checkpoint/file_io.h"
#include "runtime/checkpoint/hf_gpt2.h"
#include "runtime/checkpoint/manifest.h"

namespace zt::ckpt {

namespace {

const std::string kLlamaFixWeights =
    "give the folder save_pretrained wrote for a LlamaForCausalLM of this run's shape (config.json and "
    "model.safetensors, or model.safetensors.index.json and its shards)";

std::string hf_parent_dir(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

bool hf_ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The shortest decimal that reads back as this float, as a double (1e-5f -> 1e-05, not 9.99999974e-06),
// so config.json says what transformers' own config would.
double float_as_decimal(float v) {
  char buf[32];
  for (int p = 1; p <= 9; ++p) {
    std::snprintf(buf, sizeof buf, "%.*g", p, double(v));
    if (std::strtof(buf, nullptr) == v) return std::strtod(buf, nullptr);
  }
  return double(v);
}

// A config value as config.json writes it: integers without a fraction, others in the fewest digits
// that read back (floats through float_as_decimal first).
std::string number_text(double v) {
  char buf[40];
  if (v == std::floor(v) && std::abs(v) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  for (int p = 1; p <= 17; ++p) {
    std::snprintf(buf, sizeof buf, "%.*g", p, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

// Reads config.json's keys into a ModelConfig, each problem an error naming the key.
class LlamaConfigReader {
 public:
  LlamaConfigReader(const nlohmann::json& c, const std::string& path, Diagnostics& d) : c_(c), path_(path), d_(d) {}

  bool has(const char* k) const { return c_.contains(k) && !c_[k].is_null(); }
  std::string where(const std::string& k) const { return path_ + ": " + k; }

  int integer(const char* k, std::optional<int> def) {
    if (!has(k)) {
      if (!def) d_.error(where(k), "", "missing", "give the model's " + std::string(k) + " (save_pretrained writes it)");
      return def.value_or(0);
    }
    const auto& v = c_[k];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > (int64_t(1) << 30)) {
      d_.error(where(k), v.dump(), "expected a non-negative integer", "give the model's " + std::string(k));
      return def.value_or(0);
    }
    return int(v.get<int64_t>());
  }
  double number(const nlohmann::json& obj, const std::string& prefix, const char* k, std::optional<double> def) {
    if (!obj.contains(k) || obj[k].is_null()) {
      if (!def) d_.error(where(prefix + k), "", "missing", "give the model's " + std::string(k));
      return def.value_or(0.0);
    }
    if (!obj[k].is_number()) {
      d_.error(where(prefix + k), obj[k].dump(), "expected a number", "give the model's " + std::string(k));
      return def.value_or(0.0);
    }
    return obj[k].get<double>();
  }
  bool flag(const char* k, bool def) {
    if (!has(k)) return def;
    if (!c_[k].is_boolean()) {
      d_.error(where(k), c_[k].dump(), "expected true or false", "");
      return def;
    }
    return c_[k].get<bool>();
  }
  // attention_bias, mlp_bias, rope_interleaved: only false is built.
  void refuse_true(const char* k, const std::string& what) {
    if (flag(k, false))
      d_.error(where(k), "true", "zerotrain's Llama has " + what,
               "use a checkpoint with " + std::string(k) + " false (Llama, TinyLlama, SmolLM2 and Llama 3.2 all have it)");
  }

  // rope_scaling (v4) or rope_parameters (v5: also rope_theta): default or llama3.
  void rope(ModelConfig& m) {
    const bool v5 = has("rope_parameters");
    const std::string key = v5 ? "rope_parameters" : "rope_scaling";
    m.rope_theta = number(c_, "", "rope_theta", 10000.0);
    if (!has(key.c_str())) return;
    const auto& r = c_[key];
    if (!r.is_object()) {
      d_.error(where(key), r.dump(), "expected an object or null", "");
      return;
    }
    const std::string pre = key + ".";
    if (v5) m.rope_theta = number(r, pre, "rope_theta", m.rope_theta);
    const char* type_key = r.contains("rope_type") ? "rope_type" : r.contains("type") ? "type" : nullptr;
    std::string type = "default";
    if (type_key) {
      if (!r[type_key].is_string()) {
        d_.error(where(pre + type_key), r[type_key].dump(), "expected a string", "");
        return;
      }
      type = r[type_key].get<std::string>();
    }
    if (type == "default") return;
    if (type != "llama3") {
      d_.error(where(pre + (type_key ? type_key : "rope_type")), "\"" + type + "\"",
               "zerotrain's RoPE has the default and the llama3 frequency rules only",
               "use a checkpoint whose " + key + " is null, \"default\" or \"llama3\"");
      return;
    }
    m.rope_scaling.type = RopeScaling::Type::Llama3;
    m.rope_scaling.factor = number(r, pre, "factor", std::nullopt);
    m.rope_scaling.low_freq_factor = number(r, pre, "low_freq_factor", std::nullopt);
    m.rope_scaling.high_freq_factor = number(r, pre, "high_freq_factor", std::nullopt);
    m.rope_scaling.original_max_position_embeddings = int(number(r, pre, "original_max_position_embeddings", std::nullopt));
    if (!(m.rope_scaling.factor > 0) || !(m.rope_scaling.high_freq_factor > m.rope_scaling.low_freq_factor) ||
        m.rope_scaling.original_max_position_embeddings < 1)
      d_.error(where(key), r.dump(),
               "llama3 needs factor > 0, high_freq_factor > low_freq_factor and original_max_position_embeddings >= 1",
               "fix the checkpoint's " + key);
  }

 private:
  const nlohmann::json& c_;
  const std::string& path_;
  Diagnostics& d_;
};

bool says_gpt2(const nlohmann::json& c) {
  if (c.contains("model_type") && c["model_type"] == "gpt2") return true;
  if (c.contains("architectures") && c["architectures"].is_array())
    for (const auto& a : c["architectures"])
      if (a == "GPT2LMHeadModel" || a == "GPT2Model") return true;
  return false;
}

nlohmann::json hf_parse_json_file(const std::string& path) {
  try {
    return nlohmann::json::parse(read_small_file(path));
  } catch (const IoError& e) {
    throw UserError(path, "", e.what(), "check that the file is readable by this user");
  } catch (const std::exception& e) {
    throw UserError(path, "", std::string("not valid JSON: ") + e.what(), "fix or replace it");
  }
}

}  // namespace

int64_t HfLlamaTensor::numel() const {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

std::vector<HfLlamaTensor> hf_llama_tensors(const ModelConfig& m, const std::vector<UnitLayout>& units,
                                            int64_t vocab_rows) {
  if (!m.llama()) throw std::invalid_argument("hf_llama_tensors: " + m.name + " is not a Llama model");
  if (vocab_rows < 0 || vocab_rows > m.vocab)
    throw std::invalid_argument("hf_llama_tensors: vocab_rows " + std::to_string(vocab_rows) + " outside 0.." +
                                std::to_string(m.vocab));
  const int64_t V = vocab_rows > 0 ? vocab_rows : m.vocab;
  std::vector<HfLlamaTensor> out;
  auto put = [&](std::string name, const UnitLayout& u, const TensorView& t, int64_t row0, int64_t rows) {
    const int64_t cols = t.shape.size() == 2 ? t.shape[1] : 1;
    HfLlamaTensor h;
    h.name = std::move(name);
    h.unit = u.index;
    h.offset = t.offset + row0 * cols;
    h.shape = t.shape.size() == 2 ? std::vector<int64_t>{rows, cols} : t.shape;
    out.push_back(std::move(h));
  };
  const int64_t q = m.attention_width(), kv = int64_t(m.kv_head_count()) * m.head_width(), I = m.intermediate;
  for (const auto& u : units)
    for (const auto& t : u.tensors) {
      const int64_t rows = t.shape.empty() ? 0 : t.shape[0];
      if (u.kind == UnitKind::Embedding) {
        put("model.embed_tokens.weight", u, t, 0, V);
      } else if (u.kind == UnitKind::Head) {
        if (t.name == "lm_head_w") put("lm_head.weight", u, t, 0, V);
        else put("model.norm.weight", u, t, 0, rows);
      } else {
        const std::string p = "model.layers." + std::to_string(u.index - 1) + ".";
        if (t.name == "ln1_w") put(p + "input_layernorm.weight", u, t, 0, rows);
        else if (t.name == "ln2_w") put(p + "post_attention_layernorm.weight", u, t, 0, rows);
        else if (t.name == "attproj_w") put(p + "self_attn.o_proj.weight", u, t, 0, rows);
        else if (t.name == "down_w") put(p + "mlp.down_proj.weight", u, t, 0, rows);
        else if (t.name == "qkv_w") {
          put(p + "self_attn.q_proj.weight", u, t, 0, q);
          put(p + "self_attn.k_proj.weight", u, t, q, kv);
          put(p + "self_attn.v_proj.weight", u, t, q + kv, kv);
        } else if (t.name == "gate_up_w") {
          put(p + "mlp.gate_proj.weight", u, t, 0, I);
          put(p + "mlp.up_proj.weight", u, t, I, I);
        } else {
          throw std::invalid_argument("no Hugging Face Llama name for " + u.name + "." + t.name);
        }
      }
    }
  std::sort(out.begin(), out.end(), [](const HfLlamaTensor& a, const HfLlamaTensor& b) { return a.name < b.name; });
  return out;
}

ModelConfig hf_llama_model_config(const nlohmann::json& c, const std::string& path) {
  Diagnostics d;
  if (!c.is_object()) throw UserError(path, c.dump().substr(0, 40), "expected a JSON object (a model's config.json)", "");
  const std::string fix_model = "give a LlamaForCausalLM checkpoint (zerotrain builds GPT-2 and Llama)";
  if (c.contains("model_type") && c["model_type"] != "llama")
    d.error(path + ": model_type", c["model_type"].dump(), "not a Llama model", fix_model);
  if (c.contains("architectures")) {
    bool llama = false;
    if (c["architectures"].is_array())
      for (const auto& a : c["architectures"]) llama = llama || a == "LlamaForCausalLM" || a == "LlamaModel";
    if (!llama) d.error(path + ": architectures", c["architectures"].dump(), "not LlamaForCausalLM", fix_model);
  }
  if (!c.contains("model_type") && !c.contains("architectures"))
    d.error(path + ": model_type", "", "missing (with architectures): cannot tell that this is a Llama model",
            "add \"model_type\": \"llama\" if it is one");
  LlamaConfigReader r(c, path, d);
  ModelConfig m;
  m.name = "hf-llama";
  m.family = ModelFamily::Llama;
  m.dim = r.integer("hidden_size", std::nullopt);
  m.layers = r.integer("num_hidden_layers", std::nullopt);
  m.heads = r.integer("num_attention_heads", std::nullopt);
  m.kv_heads = r.integer("num_key_value_heads", m.heads);
  m.intermediate = r.integer("intermediate_size", std::nullopt);
  m.vocab = r.integer("vocab_size", std::nullopt);
  m.head_dim = r.integer("head_dim", m.heads > 0 ? m.dim / m.heads : 0);
  m.max_positions = r.integer("max_position_embeddings", 2048);
  m.seq_len = std::min(m.max_positions, kHfLlamaDefaultContext);
  m.tied_embeddings = r.flag("tie_word_embeddings", false);
  m.norm_eps = float(r.number(c, "", "rms_norm_eps", 1e-6));
  m.init_std = float(r.number(c, "", "initializer_range", 0.02));
  r.rope(m);
  r.refuse_true("attention_bias", "no biases in q/k/v/o_proj");
  r.refuse_true("mlp_bias", "no biases in gate/up/down_proj");
  r.refuse_true("rope_interleaved", "rotate-half RoPE (pairs i and i + hd/2), not interleaved pairs");
  if (r.has("hidden_act") && c["hidden_act"] != "silu")
    d.error(path + ": hidden_act", c["hidden_act"].dump(), "zerotrain's Llama MLP is SwiGLU with silu",
            "use a checkpoint with \"hidden_act\": \"silu\"");
  if (!d.has_errors())
    for (const auto& p : model_shape_problems(m)) d.error(path, "", "the shape it describes cannot be built: " + p, kLlamaFixWeights);
  if (d.has_errors()) throw UserError(d);
  return m;
}

nlohmann::ordered_json hf_llama_config(const ModelConfig& m, const std::string& torch_dtype) {
  nlohmann::ordered_json rope = nullptr;
  if (m.rope_scaling.type == RopeScaling::Type::Llama3)
    rope = {{"factor", m.rope_scaling.factor},
            {"high_freq_factor", m.rope_scaling.high_freq_factor},
            {"low_freq_factor", m.rope_scaling.low_freq_factor},
            {"original_max_position_embeddings", m.rope_scaling.original_max_position_embeddings},
            {"rope_type", "llama3"}};
  return {{"architectures", {"LlamaForCausalLM"}},
          {"attention_bias", false},
          {"attention_dropout", 0.0},
          {"head_dim", m.head_width()},
          {"hidden_act", "silu"},
          {"hidden_size", m.dim},
          {"initializer_range", float_as_decimal(m.init_std)},
          {"intermediate_size", m.intermediate},
          {"max_position_embeddings", m.max_positions > 0 ? m.max_positions : m.seq_len},
          {"mlp_bias", false},
          {"model_type", "llama"},
          {"num_attention_heads", m.heads},
          {"num_hidden_layers", m.layers},
          {"num_key_value_heads", m.kv_head_count()},
          {"pretraining_tp", 1},
          {"rms_norm_eps", float_as_decimal(m.norm_eps)},
          {"rope_scaling", rope},
          {"rope_theta", m.rope_theta},
          {"tie_word_embeddings", m.tied_embeddings},
          {"torch_dtype", torch_dtype},
          {"use_cache", true},
          {"vocab_size", m.vocab}};
}

void check_same_llama(const ModelConfig& run, const ModelConfig& file, const std::string& cfg_path, Diagnostics& d) {
  auto num = [&](const char* key, const char* flag, double a, double b) {
    if (a == b || std::abs(a - b) <= 1e-6 * std::abs(b)) return;
    d.error(cfg_path + ": " + key, number_text(b), "this run's model (" + run.name + ") has " + number_text(a),
            std::string("run with the model the weights were made for: ") + flag);
  };
  auto eps = [](float v) { return float_as_decimal(v); };
  const std::string preset = "leave out --model (the shape then comes from config.json) or pick the preset it matches";
  if (!run.llama()) {
    d.error(cfg_path + ": model_type", "\"llama\"", "this run's model (" + run.name + ") is GPT-2", preset);
    return;
  }
  num("num_hidden_layers", "--layers", run.layers, file.layers);
  num("num_attention_heads", "--heads", run.heads, file.heads);
  num("hidden_size", "--dim", run.dim, file.dim);
  if (file.vocab > run.vocab)  // a smaller file pads (HfLlamaReader)
    d.error(cfg_path + ": vocab_size", std::to_string(file.vocab),
            "the file's vocabulary is larger than this run's model's (" + std::to_string(run.vocab) +
                "; a smaller one is padded with zero rows)",
            "run with --vocab " + std::to_string(file.vocab) + " or more");
  num("num_key_value_heads", preset.c_str(), run.kv_head_count(), file.kv_head_count());
  num("head_dim", preset.c_str(), run.head_width(), file.head_width());
  num("intermediate_size", preset.c_str(), run.intermediate, file.intermediate);
  num("rms_norm_eps", preset.c_str(), eps(run.norm_eps), eps(file.norm_eps));
  num("rope_theta", preset.c_str(), run.rope_theta, file.rope_theta);
  if (run.tied_embeddings != file.tied_embeddings)
    d.error(cfg_path + ": tie_word_embeddings", file.tied_embeddings ? "true" : "false",
            std::string("this run's model has ") + (run.tied_embeddings ? "tied" : "untied") + " embeddings",
            run.tied_embeddings ? "add --untied-embeddings" : preset);
  const auto& a = run.rope_scaling;
  const auto& b = file.rope_scaling;
  const bool l3a = a.type == RopeScaling::Type::Llama3, l3b = b.type == RopeScaling::Type::Llama3;
  if (l3a != l3b)
    d.error(cfg_path + ": rope_scaling", l3b ? "llama3" : "default",
            std::string("this run's model has ") + (l3a ? "llama3" : "default") + " RoPE", preset);
  else if (l3a) {
    num("rope_scaling.factor", preset.c_str(), a.factor, b.factor);
    num("rope_scaling.low_freq_factor", preset.c_str(), a.low_freq_factor, b.low_freq_factor);
    num("rope_scaling.high_freq_factor", preset.c_str(), a.high_freq_factor, b.high_freq_factor);
    num("rope_scaling.original_max_position_embeddings", preset.c_str(), a.original_max_position_embeddings,
        b.original_max_position_embeddings);
  }
}

std::string hf_weights_dir(const std::string& path) {
  if (is_directory(path)) {
    if (path_exists(join_path(path, "model.safetensors")) || path_exists(join_path(path, "model.safetensors.index.json")))
      return path;
    return "";
  }
  return hf_parent_dir(path);
}

std::optional<ModelConfig> hf_llama_config_at(const std::string& path) {
  if (path.empty()) return std::nullopt;
  const std::string dir = hf_weights_dir(path);
  if (dir.empty()) return std::nullopt;
  const std::string cfg = join_path(dir, "config.json");
  if (!path_exists(cfg)) return std::nullopt;
  const nlohmann::json c = hf_parse_json_file(cfg);
  if (says_gpt2(c)) return std::nullopt;
  return hf_llama_model_config(c, cfg);
}

std::unique_ptr<HfLlamaReader> HfLlamaReader::open(const std::string& path, const std::vector<UnitLayout>& units,
                                                   const ModelConfig& model, Diagnostics& d) {
  const size_t before = d.error_count();
  if (!model.llama()) {
    d.error("--init-from", path, "Llama weights, but this run's model (" + model.name + ") is GPT-2",
            "leave out --model (the shape then comes from config.json) or pick a Llama preset");
    return nullptr;
  }
  // Which files: a folder's model.safetensors, else its index; a file as named.
  const std::string dir = hf_weights_dir(path);
  if (dir.empty()) {
    d.error("--init-from", path, "holds neither model.safetensors nor model.safetensors.index.json", kLlamaFixWeights);
    return nullptr;
  }
  std::string index, single;
  if (is_directory(path)) {
    if (path_exists(join_path(path, "model.safetensors"))) single = join_path(path, "model.safetensors");
    else index = join_path(path, "model.safetensors.index.json");
  } else if (hf_ends_with(path, ".json")) {
    index = path;
  } else {
    single = path;
  }
  std::vector<std::string> files;
  std::map<std::string, std::string> weight_map;  // tensor -> file, from the index
  if (!single.empty()) {
    files.push_back(single);
  } else {
    nlohmann::json j;
    try {
      j = hf_parse_json_file(index);
    } catch (const UserError& e) {
      for (const auto& x : e.diagnostics().all()) d.add(x);
      return nullptr;
    }
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object()) {
      d.error(index + ": weight_map", "", "missing or not an object (tensor name -> shard file)", kLlamaFixWeights);
      return nullptr;
    }
    std::set<std::string> seen;
    for (const auto& [name, file] : j["weight_map"].items()) {
      if (!file.is_string() || file.get<std::string>().empty() || file.get<std::string>().find('/') != std::string::npos) {
        d.error(index + ": weight_map." + name, file.dump(), "expected the name of a shard file in " + dir, kLlamaFixWeights);
        continue;
      }
      weight_map[name] = file.get<std::string>();
      if (seen.insert(file.get<std::string>()).second) files.push_back(join_path(dir, file.get<std::string>()));
    }
    if (files.empty() && d.error_count() == before)
      d.error(index + ": weight_map", "{}", "names no tensors", kLlamaFixWeights);
  }
  if (d.error_count() != before) return nullptr;
  std::unique_ptr<HfLlamaReader> r(new HfLlamaReader());
  for (const auto& f : files) {
    auto sf = SafetensorsFile::open(f, d, kLlamaFixWeights);
    if (sf) r->files_.push_back(std::move(sf));
  }
  if (d.error_count() != before) return nullptr;
  for (const auto& f : r->files_)
    for (const auto& t : f->tensors()) {
      const std::string base = f->path().substr(f->path().rfind('/') + 1);
      if (!weight_map.empty()) {
        const auto w = weight_map.find(t.name);
        if (w == weight_map.end() || w->second != base) {
          d.error(f->path() + " (tensor \"" + t.name + "\")", "",
                  w == weight_map.end() ? "not in the index's weight_map" : "the index's weight_map puts it in " + w->second,
                  "give the index save_pretrained wrote with these shards");
          continue;
        }
      }
      if (r->by_name_.count(t.name))
        d.error(f->path() + " (tensor \"" + t.name + "\")", "", "also in " + r->by_name_[t.name].file->path(), kLlamaFixWeights);
      r->by_name_[t.name] = Source{f.get(), &t};
    }
  for (const auto& [name, file] : weight_map)
    if (!r->by_name_.count(name))
      d.error(index + ": weight_map." + name, "\"" + file + "\"", "the shard does not hold this tensor", kLlamaFixWeights);
  if (d.error_count() != before) return nullptr;

  // A `zerotrain export --format zerotrain` file: our names and layout, one tensor each.
  const auto fmt = r->files_.front()->metadata().find("format");
  const bool zt_names = r->files_.size() == 1 && fmt != r->files_.front()->metadata().end() && fmt->second == "zerotrain-weights";

  // config.json: the shape the weights were made for against this run's.
  const std::string cfg_path = join_path(dir, "config.json");
  int64_t config_vocab = 0;  // config.json's vocab_size, when it was read
  if (!zt_names && path_exists(cfg_path)) {
    try {
      const ModelConfig described = hf_llama_model_config(hf_parse_json_file(cfg_path), cfg_path);
      config_vocab = described.vocab;
      check_same_llama(model, described, cfg_path, d);
    } catch (const UserError& e) {
      for (const auto& x : e.diagnostics().all()) d.add(x);
    }
  }

  // Every tensor of ours present, its shape and dtype.
  for (const auto& u : units) r->unit_numel_.push_back(u.numel);
  if (zt_names) {
    for (const auto& u : units)
      for (const auto& t : u.tensors) r->tensors_.push_back(HfLlamaTensor{u.name + "." + t.name, u.index, t.offset, t.shape});
    // A zerotrain export of imported weights carries the vocabulary they were imported with.
    r->hf_vocab_ = recorded_hf_vocab(*r->files_.front(), path, model.vocab, kLlamaFixWeights, d);
  } else {
    // The file's vocabulary: embed_tokens' rows (checked against the model's below).
    int64_t rows = model.vocab;
    const auto e = r->by_name_.find("model.embed_tokens.weight");
    if (e != r->by_name_.end() && e->second.tensor->shape.size() == 2 && e->second.tensor->shape[1] == model.dim)
      rows = e->second.tensor->shape[0];
    if (rows > model.vocab && rows != config_vocab)  // else config.json's vocab_size said so already
      d.error(e->second.file->path() + " (tensor \"model.embed_tokens.weight\")", shape_text(e->second.tensor->shape),
              "the file's vocabulary of " + std::to_string(rows) + " rows is larger than this run's model's (" +
                  std::to_string(model.vocab) + "; a smaller one is padded with zero rows)",
              "run with --vocab " + std::to_string(rows) + " or more");
    if (rows > model.vocab) return nullptr;  // every vocabulary tensor's shape would say the same again
    if (rows >= 1 && rows < model.vocab) r->hf_vocab_ = rows;
    r->tensors_ = hf_llama_tensors(model, units, rows >= 1 && rows < model.vocab ? rows : 0);
  }
  std::set<std::string> ours;
  for (const auto& t : r->tensors_) {
    ours.insert(t.name);
    const auto s = r->by_name_.find(t.name);
    if (s == r->by_name_.end()) {
      d.error(path + " (tensor \"" + t.name + "\")", "", "missing: this run's model needs it " + shape_text(t.shape),
              t.name == "lm_head.weight"
                  ? "the checkpoint has tied embeddings (no lm_head.weight): run a tied model (its config.json says "
                    "tie_word_embeddings true; a preset with untied embeddings does not fit)"
                  : kLlamaFixWeights);
      continue;
    }
    const StTensor& st = *s->second.tensor;
    if (st.shape != t.shape)
      d.error(s->second.file->path() + " (tensor \"" + t.name + "\")", shape_text(st.shape),
              "expected " + shape_text(t.shape) + " for this run's model (" + model_text(model) + ")", kLlamaFixWeights);
    if (st.dtype != StDType::F32 && st.dtype != StDType::F16 && st.dtype != StDType::BF16 && st.dtype != StDType::F64)
      d.error(s->second.file->path() + " (tensor \"" + t.name + "\")", st_dtype_name(st.dtype),
              "expected F32, BF16, F16 or F64", kLlamaFixWeights);
  }
  for (const auto& [name, src] : r->by_name_) {
    if (ours.count(name) || hf_ends_with(name, ".self_attn.rotary_emb.inv_freq")) continue;
    const std::string where = src.file->path() + " (tensor \"" + name + "\")";
    if (name == "lm_head.weight" && model.tied_embeddings) {
      // A tied model saved with its (shared) head written out: fine when it is the embedding.
      const auto e = r->by_name_.find("model.embed_tokens.weight");
      bool same = false;
      if (e != r->by_name_.end() && e->second.tensor->shape == src.tensor->shape &&
          e->second.tensor->dtype == src.tensor->dtype) {
        std::vector<char> a(size_t(src.tensor->bytes())), b(a.size());
        src.file->read(*src.tensor, 0, a.size(), a.data());
        e->second.file->read(*e->second.tensor, 0, b.size(), b.data());
        same = a == b;
      }
      if (!same)
        d.error(where, shape_text(src.tensor->shape),
                "differs from model.embed_tokens.weight, but this run's model ties the LM head to the embedding",
                "run an untied model (--untied-embeddings, or leave out --model when config.json says "
                "tie_word_embeddings false)");
      continue;
    }
    d.error(where, shape_text(src.tensor->shape), "not part of this run's Llama (" + model_text(model) + ")", kLlamaFixWeights);
  }
  if (d.error_count() != before) return nullptr;
  return r;
}

void HfLlamaReader::read_unit(int u, float* out) const {
  // Vocabulary rows a smaller file lacks start at zero; every other element is the file's.
  if (hf_vocab_ > 0) std::fill(out, out + unit_numel_.at(size_t(u)), 0.0f);
  std::vector<char> raw;
  for (const auto& t : tensors_) {
    if (t.unit != u) continue;
    const Source& s = by_name_.at(t.name);
    raw.resize(size_t(s.tensor->bytes()));
    s.file->read(*s.tensor, 0, raw.size(), raw.data());
    to_f32(s.tensor->dtype, raw.data(), t.numel(), out + t.offset);
  }
}

uint64_t HfLlamaReader::bytes_read() const {
  uint64_t n = 0;
  for (const auto& f : files_) n += f->bytes_read();
  return n;
}

int64_t init_from_hf_llama(ShardedState& state, RankExchange& ex, const std::string& path, const ModelConfig& model) {
  Diagnostics d;
  auto reader = HfLlamaReader::open(path, state.units(), model, d);
  import_units(state, ex, path, reader != nullptr, d, [&](int u, float* values) { reader->read_unit(u, values); });
  return reader->hf_vocab();
}

HfLlamaWritten write_hf_llama_safetensors(FileWriter& out, const ModelConfig& m, const std::vector<UnitLayout>& units,
                                          const std::function<void(int, float*)>& read_unit, StDType dtype,
                                          const StMetadata& meta, int64_t vocab_rows) {
  if (dtype != StDType::F32 && dtype != StDType::BF16)
    throw std::invalid_argument(std::string("write_hf_llama_safetensors: ") + st_dtype_name(dtype) + " is not F32 or BF16");
  const auto tensors = hf_llama_tensors(m, units, vocab_rows);
  std::vector<StTensor> header;
  for (const auto& t : tensors) {
    StTensor s;
    s.name = t.name;
    s.dtype = dtype;
    s.shape = t.shape;
    header.push_back(std::move(s));
  }
  SafetensorsWriter w(out, header, meta);
  HfLlamaWritten res;
  std::vector<float> unit;
  std::vector<uint16_t> half;
  int held = -1;
  for (const auto& t : tensors) {
    if (t.unit != held) {
      unit.resize(size_t(units.at(size_t(t.unit)).numel));
      read_unit(t.unit, unit.data());
      held = t.unit;
    }
    const float* src = unit.data() + t.offset;
    const int64_t n = t.numel();
    int64_t extra = 0;
    if (dtype == StDType::BF16) {
      half.resize(size_t(n));
      for (int64_t i = 0; i < n; ++i) half[size_t(i)] = f32_to_bf16_bits(src[i]);
      w.append(half.data(), half.size() * 2);
      extra = n * 2;
    } else {
      w.append(src, size_t(n) * 4);
    }
    res.peak_buffer_bytes = std::max(res.peak_buffer_bytes, int64_t(unit.size()) * 4 + extra);
    res.params += n;
  }
  w.finish();
  res.tensors = int64_t(tensors.size());
  res.file_bytes = w.file_bytes();
  return res;
}

}  // namespace zt::ckpt
