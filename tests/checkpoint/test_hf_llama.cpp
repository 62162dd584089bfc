// Hugging Face Llama import and export against tests/data/llama's save_pretrained fixtures: each
// config.json reads as its preset, each model.safetensors imports with every unit buffer equal to
// the file's tensors (q/k/v and gate/up stacked as row blocks), a sharded copy (two files and an
// index) and BF16 files import the same, a v5 config (rope_parameters) reads as the v4 one, every
// refusal names its key or tensor, and the export writes the fixture's model.safetensors byte for byte.
// A file whose vocabulary is smaller than the model's imports with zero rows past it and exports its
// own rows only; a larger one is refused naming both counts and --vocab.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "base/half_float.h"
#include "runtime/checkpoint/checkpoint_save.h"
#include "runtime/checkpoint/export.h"
#include "runtime/checkpoint/file_io.h"
#include "runtime/checkpoint/hf_llama.h"
#include "runtime/checkpoint/safetensors.h"
#include "tests/checkpoint/ckpt_test_util.h"
#include "tests/checkpoint/fake_state.h"
#include "tests/checkpoint/thread_comm.h"

namespace zt::ckpt {
namespace {

const char* const kCases[] = {"llama_tiny", "llama_tiny_tied", "llama_tiny_rope_llama3"};

std::string fixture(const std::string& c) { return std::string(ZT_LLAMA_FIXTURES_DIR) + "/" + c; }

ModelConfig preset_of(const std::string& c) {
  std::string name = c;
  for (auto& ch : name)
    if (ch == '_') ch = '-';
  const auto m = model_preset(name);
  EXPECT_TRUE(m) << name;
  return m.value_or(ModelConfig{});
}

nlohmann::json config_of(const std::string& c) { return nlohmann::json::parse(read_small_file(fixture(c) + "/config.json")); }

struct Tensor {
  StTensor meta;
  std::vector<char> bytes;
};

std::vector<Tensor> tensors_of(const std::string& file) {
  Diagnostics d;
  auto f = SafetensorsFile::open(file, d, "");
  EXPECT_TRUE(f) << d.format();
  std::vector<Tensor> out;
  if (!f) return out;
  for (const auto& t : f->tensors()) {
    Tensor x{t, std::vector<char>(size_t(t.bytes()))};
    f->read(t, 0, x.bytes.size(), x.bytes.data());
    out.push_back(std::move(x));
  }
  return out;
}

void write_file(const std::string& path, const std::vector<Tensor>& ts, const StMetadata& meta = {{"format", "pt"}}) {
  std::vector<StTensor> metas;
  for (const auto& t : ts) metas.push_back(t.meta);
  FileWriter out(path, false);
  SafetensorsWriter w(out, metas, meta);
  for (const auto& t : ts) w.append(t.bytes.data(), t.bytes.size());
  w.finish();
  out.close();
}

// A folder holding config.json (the fixture's, or `config`) and these tensors as model.safetensors.
std::string make_folder(const test::TempDir& dir, const std::string& name, const std::vector<Tensor>& ts,
                        const nlohmann::json& config) {
  const std::string d = dir.sub(name);
  make_directories(d);
  write_file(d + "/model.safetensors", ts);
  replace_file_atomically(d + "/config.json", config.dump(2));
  return d;
}

std::vector<std::vector<float>> import_units(const std::string& path, const ModelConfig& m, Diagnostics& d) {
  const auto units = build_unit_layouts(m);
  auto r = HfLlamaReader::open(path, units, m, d);
  if (!r) return {};
  std::vector<std::vector<float>> out;
  for (const auto& u : units) {
    out.emplace_back(size_t(u.numel), -12345.f);
    r->read_unit(u.index, out.back().data());
  }
  return out;
}

std::vector<float> floats(const Tensor& t) {
  std::vector<float> v(size_t(t.meta.numel()));
  std::memcpy(v.data(), t.bytes.data(), v.size() * 4);
  return v;
}

const Tensor& named(const std::vector<Tensor>& ts, const std::string& n) {
  for (const auto& t : ts)
    if (t.meta.name == n) return t;
  throw std::out_of_range(n);
}

TEST(HfLlamaConfig, EachFixtureReadsAsItsPreset) {
  for (const char* c : kCases) {
    SCOPED_TRACE(c);
    const ModelConfig p = preset_of(c);
    const ModelConfig m = hf_llama_model_config(config_of(c), fixture(c) + "/config.json");
    EXPECT_TRUE(m.llama());
    EXPECT_EQ(m.layers, p.layers);
    EXPECT_EQ(m.heads, p.heads);
    EXPECT_EQ(m.kv_heads, p.kv_heads);
    EXPECT_EQ(m.head_width(), p.head_width());
    EXPECT_EQ(m.dim, p.dim);
    EXPECT_EQ(m.intermediate, p.intermediate);
    EXPECT_EQ(m.vocab, p.vocab);
    EXPECT_EQ(m.tied_embeddings, p.tied_embeddings);
    EXPECT_EQ(m.norm_eps, p.norm_eps);
    EXPECT_EQ(m.rope_theta, p.rope_theta);
    EXPECT_EQ(m.rope_scaling.type, p.rope_scaling.type);
    EXPECT_EQ(m.rope_scaling.factor, p.rope_scaling.factor);
    EXPECT_EQ(m.rope_scaling.original_max_position_embeddings, p.rope_scaling.original_max_position_embeddings);
    EXPECT_EQ(m.max_positions, p.max_positions);
    EXPECT_EQ(m.seq_len, 256) << "max_position_embeddings, under the default cap";
    EXPECT_EQ(m.init_std, p.init_std);
    Diagnostics d;
    check_same_llama(p, m, "config.json", d);
    EXPECT_FALSE(d.has_errors()) << d.format();
  }
}

// What we write is what save_pretrained wrote, key for key (its bookkeeping keys aside), and reads back.
TEST(HfLlamaConfig, ExportedConfigHasTheFixturesValuesAndReadsBack) {
  for (const char* c : kCases) {
    SCOPED_TRACE(c);
    const ModelConfig p = preset_of(c);
    const auto ours = nlohmann::json(hf_llama_config(p, "float32"));
    const auto theirs = config_of(c);
    for (const auto& [k, v] : theirs.items()) {
      if (k == "transformers_version" || k == "bos_token_id" || k == "eos_token_id") continue;
      ASSERT_TRUE(ours.contains(k)) << k;
      EXPECT_EQ(ours[k], v) << k;
    }
    const ModelConfig back = hf_llama_model_config(ours, "ours");
    Diagnostics d;
    check_same_llama(p, back, "ours", d);
    EXPECT_FALSE(d.has_errors()) << d.format();
  }
}

TEST(HfLlamaConfig, V5RopeParametersReadAsV4) {
  auto v4 = config_of("llama_tiny_rope_llama3");
  auto v5 = v4;
  v5["rope_parameters"] = v4["rope_scaling"];
  v5["rope_parameters"]["rope_theta"] = 250000.0;
  v5.erase("rope_scaling");
  v5.erase("rope_theta");
  const ModelConfig a = hf_llama_model_config(v4, "v4"), b = hf_llama_model_config(v5, "v5");
  EXPECT_EQ(b.rope_theta, 250000.0);
  EXPECT_EQ(b.rope_scaling.type, RopeScaling::Type::Llama3);
  EXPECT_EQ(b.rope_scaling.factor, a.rope_scaling.factor);
  EXPECT_EQ(b.rope_scaling.low_freq_factor, a.rope_scaling.low_freq_factor);
  EXPECT_EQ(b.rope_scaling.high_freq_factor, a.rope_scaling.high_freq_factor);
  EXPECT_EQ(b.rope_scaling.original_max_position_embeddings, 64);
  auto plain = config_of("llama_tiny");
  plain.erase("rope_scaling");
  plain.erase("rope_theta");
  plain["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 500000.0}};
  const ModelConfig c = hf_llama_model_config(plain, "v5");
  EXPECT_EQ(c.rope_theta, 500000.0);
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::Default);
}

TEST(HfLlamaConfig, DefaultsAreLlamaConfigs) {
  auto c = config_of("llama_tiny");
  for (const char* k : {"num_key_value_heads", "head_dim", "tie_word_embeddings", "rms_norm_eps", "rope_theta",
                        "max_position_embeddings", "initializer_range", "rope_scaling"})
    c.erase(k);
  const ModelConfig m = hf_llama_model_config(c, "config.json");
  EXPECT_EQ(m.kv_head_count(), 4);
  EXPECT_EQ(m.head_width(), 8);
  EXPECT_FALSE(m.tied_embeddings);
  EXPECT_FLOAT_EQ(m.norm_eps, 1e-6f);
  EXPECT_EQ(m.rope_theta, 10000.0);
  EXPECT_EQ(m.max_positions, 2048);
  EXPECT_FLOAT_EQ(m.init_std, 0.02f);
}

// Each refusal: the key, the value and a fix in the message.
TEST(HfLlamaConfig, RefusalsNameTheKeyTheValueAndTheFix) {
  struct Case {
    const char* key;
    nlohmann::json value;
    std::vector<std::string> said;
  };
  const std::vector<Case> cases = {
      {"model_type", "mistral", {"config.json: model_type", "\"mistral\"", "not a Llama model", "LlamaForCausalLM"}},
      {"architectures", {"MistralForCausalLM"}, {"architectures", "MistralForCausalLM", "not LlamaForCausalLM"}},
      {"attention_bias", true, {"attention_bias", "true", "no biases", "attention_bias false"}},
      {"mlp_bias", true, {"mlp_bias", "true", "mlp_bias false"}},
      {"hidden_act", "gelu", {"hidden_act", "\"gelu\"", "silu"}},
      {"rope_interleaved", true, {"rope_interleaved", "true", "rotate-half"}},
      {"rope_scaling", {{"rope_type", "linear"}, {"factor", 2.0}},
       {"rope_scaling.rope_type", "\"linear\"", "default and the llama3", "\"llama3\""}},
      {"rope_scaling", {{"type", "dynamic"}, {"factor", 2.0}}, {"rope_scaling.type", "\"dynamic\""}},
      {"rope_parameters", {{"rope_type", "yarn"}, {"rope_theta", 1e4}}, {"rope_parameters.rope_type", "\"yarn\""}},
      {"rope_scaling", {{"rope_type", "llama3"}, {"factor", 8.0}}, {"rope_scaling.low_freq_factor", "missing"}},
      {"hidden_size", nullptr, {"config.json: hidden_size", "missing"}},
      {"num_attention_heads", "four", {"num_attention_heads", "\"four\"", "integer"}},
      {"num_key_value_heads", 3, {"kv_heads 3 must divide heads 4"}},
  };
  for (const auto& k : cases) {
    SCOPED_TRACE(k.key + (" = " + k.value.dump()));
    auto c = config_of("llama_tiny");
    if (k.value.is_null()) c.erase(k.key);
    else c[k.key] = k.value;
    try {
      hf_llama_model_config(c, "dir/config.json");
      ADD_FAILURE() << "accepted";
    } catch (const UserError& e) {
      const std::string msg = e.diagnostics().format();
      EXPECT_NE(msg.find("dir/config.json"), std::string::npos) << msg;
      for (const auto& s : k.said) EXPECT_NE(msg.find(s), std::string::npos) << "no \"" << s << "\" in: " << msg;
    }
  }
}

// Every unit buffer holds the file's tensors: checked against the layout directly (not through the
// name map), q/k/v and gate/up as row blocks of the stacked matrices.
TEST(HfLlamaImport, EachFixturesUnitsHoldItsTensors) {
  for (const char* c : kCases) {
    SCOPED_TRACE(c);
    const ModelConfig m = preset_of(c);
    Diagnostics d;
    const auto bufs = import_units(fixture(c), m, d);
    ASSERT_FALSE(bufs.empty()) << d.format();
    const auto ts = tensors_of(fixture(c) + "/model.safetensors");
    EXPECT_EQ(ts.size(), size_t(2 + 9 * m.layers + (m.tied_embeddings ? 0 : 1)));
    const auto units = build_unit_layouts(m);
    auto expect_rows = [&](int u, const std::string& ours, std::vector<std::string> parts) {
      const TensorView& t = units[size_t(u)].tensor(ours);
      std::vector<float> want;
      for (const auto& p : parts) {
        const auto v = floats(named(ts, p));
        want.insert(want.end(), v.begin(), v.end());
      }
      ASSERT_EQ(int64_t(want.size()), t.numel) << ours;
      for (int64_t i = 0; i < t.numel; ++i)
        ASSERT_EQ(bufs[size_t(u)][size_t(t.offset + i)], want[size_t(i)]) << units[size_t(u)].name << "." << ours << "[" << i << "]";
    };
    expect_rows(0, "wte", {"model.embed_tokens.weight"});
    for (int l = 0; l < m.layers; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      expect_rows(l + 1, "ln1_w", {p + "input_layernorm.weight"});
      expect_rows(l + 1, "qkv_w", {p + "self_attn.q_proj.weight", p + "self_attn.k_proj.weight", p + "self_attn.v_proj.weight"});
      expect_rows(l + 1, "attproj_w", {p + "self_attn.o_proj.weight"});
      expect_rows(l + 1, "ln2_w", {p + "post_attention_layernorm.weight"});
      expect_rows(l + 1, "gate_up_w", {p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight"});
      expect_rows(l + 1, "down_w", {p + "mlp.down_proj.weight"});
    }
    expect_rows(m.layers + 1, "lnf_w", {"model.norm.weight"});
    if (!m.tied_embeddings) expect_rows(m.layers + 1, "lm_head_w", {"lm_head.weight"});
    // The file named directly, not its folder, reads the same.
    EXPECT_EQ(import_units(fixture(c) + "/model.safetensors", m, d), bufs) << d.format();
  }
}

// Two shards and the index save_pretrained writes for large models.
TEST(HfLlamaImport, ShardedFolderImportsAsTheSingleFile) {
  test::TempDir dir;
  const ModelConfig m = preset_of("llama_tiny");
  Diagnostics d;
  const auto want = import_units(fixture("llama_tiny"), m, d);
  ASSERT_FALSE(want.empty()) << d.format();
  const auto ts = tensors_of(fixture("llama_tiny") + "/model.safetensors");
  const std::string sd = dir.sub("sharded");
  make_directories(sd);
  const size_t half = ts.size() / 2;
  const std::vector<Tensor> a(ts.begin(), ts.begin() + long(half)), b(ts.begin() + long(half), ts.end());
  const std::string na = "model-00001-of-00002.safetensors", nb = "model-00002-of-00002.safetensors";
  write_file(sd + "/" + na, a);
  write_file(sd + "/" + nb, b);
  nlohmann::json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", nlohmann::json::object()}};
  for (const auto& t : a) index["weight_map"][t.meta.name] = na;
  for (const auto& t : b) index["weight_map"][t.meta.name] = nb;
  replace_file_atomically(sd + "/model.safetensors.index.json", index.dump(2));
  replace_file_atomically(sd + "/config.json", config_of("llama_tiny").dump(2));
  {
    auto r = HfLlamaReader::open(sd, build_unit_layouts(m), m, d);
    ASSERT_TRUE(r) << d.format();
    EXPECT_EQ(r->files(), 2);
  }
  EXPECT_EQ(import_units(sd, m, d), want) << d.format();
  EXPECT_EQ(import_units(sd + "/model.safetensors.index.json", m, d), want) << d.format();
  // An index naming a shard that lacks the tensor.
  index["weight_map"]["model.norm.weight"] = na;
  replace_file_atomically(sd + "/model.safetensors.index.json", index.dump(2));
  Diagnostics bad;
  EXPECT_TRUE(import_units(sd, m, bad).empty());
  EXPECT_NE(bad.format().find("model.norm.weight"), std::string::npos) << bad.format();
  EXPECT_NE(bad.format().find("weight_map"), std::string::npos) << bad.format();
}

TEST(HfLlamaImport, Bf16AndF16FilesImportConverted) {
  test::TempDir dir;
  const ModelConfig m = preset_of("llama_tiny_tied");
  auto ts = tensors_of(fixture("llama_tiny_tied") + "/model.safetensors");
  for (int pass = 0; pass < 2; ++pass) {
    const bool bf = pass == 0;
    std::vector<Tensor> half = ts;
    for (auto& t : half) {
      const auto v = floats(t);
      std::vector<uint16_t> h(v.size());
      for (size_t i = 0; i < v.size(); ++i) h[i] = bf ? f32_to_bf16_bits(v[i]) : f32_to_f16_bits(v[i]);
      t.bytes.assign(reinterpret_cast<const char*>(h.data()), reinterpret_cast<const char*>(h.data()) + h.size() * 2);
      t.meta.dtype = bf ? StDType::BF16 : StDType::F16;
    }
    // Offsets: the writer assigns them.
    const std::string d0 = make_folder(dir, bf ? "bf16" : "f16", half, config_of("llama_tiny_tied"));
    Diagnostics d;
    const auto bufs = import_units(d0, m, d);
    ASSERT_FALSE(bufs.empty()) << d.format();
    const auto units = build_unit_layouts(m);
    const auto& wte = units[0].tensor("wte");
    const auto src = floats(named(ts, "model.embed_tokens.weight"));
    for (int64_t i = 0; i < wte.numel; ++i) {
      const float want = bf ? bf16_bits_to_f32(f32_to_bf16_bits(src[size_t(i)])) : f16_bits_to_f32(f32_to_f16_bits(src[size_t(i)]));
      ASSERT_EQ(bufs[0][size_t(wte.offset + i)], want) << i;
    }
  }
}

TEST(HfLlamaImport, TiedLmHeadEqualToTheEmbeddingIsIgnoredADifferentOneRefused) {
  test::TempDir dir;
  const ModelConfig m = preset_of("llama_tiny_tied");
  Diagnostics d;
  const auto want = import_units(fixture("llama_tiny_tied"), m, d);
  ASSERT_FALSE(want.empty()) << d.format();
  auto ts = tensors_of(fixture("llama_tiny_tied") + "/model.safetensors");
  Tensor head = named(ts, "model.embed_tokens.weight");
  head.meta.name = "lm_head.weight";
  ts.insert(ts.begin(), head);
  EXPECT_EQ(import_units(make_folder(dir, "same", ts, config_of("llama_tiny_tied")), m, d), want) << d.format();
  ts[0].bytes[5] ^= 1;
  Diagnostics bad;
  EXPECT_TRUE(import_units(make_folder(dir, "differs", ts, config_of("llama_tiny_tied")), m, bad).empty());
  const std::string msg = bad.format();
  EXPECT_NE(msg.find("\"lm_head.weight\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("differs from model.embed_tokens.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--untied-embeddings"), std::string::npos) << msg;
}

TEST(HfLlamaImport, TensorRefusalsNameTheTensorAndTheFix) {
  test::TempDir dir;
  const auto ts = tensors_of(fixture("llama_tiny") + "/model.safetensors");
  const auto cfg = config_of("llama_tiny");
  const ModelConfig m = preset_of("llama_tiny");
  auto refused = [&](const std::string& name, const std::vector<Tensor>& files_tensors, const nlohmann::json& config,
                     const ModelConfig& model, const std::vector<std::string>& said) {
    SCOPED_TRACE(name);
    Diagnostics d;
    EXPECT_TRUE(import_units(make_folder(dir, name, files_tensors, config), model, d).empty()) << "accepted";
    const std::string msg = d.format();
    for (const auto& s : said) EXPECT_NE(msg.find(s), std::string::npos) << "no \"" << s << "\" in: " << msg;
  };
  std::vector<Tensor> missing;
  for (const auto& t : ts)
    if (t.meta.name != "model.layers.1.mlp.up_proj.weight") missing.push_back(t);
  refused("missing", missing, cfg, m, {"\"model.layers.1.mlp.up_proj.weight\"", "missing", "[80, 32]"});
  std::vector<Tensor> no_head;
  for (const auto& t : ts)
    if (t.meta.name != "lm_head.weight") no_head.push_back(t);
  refused("no_head", no_head, cfg, m, {"\"lm_head.weight\"", "missing", "tied embeddings"});
  auto shape = ts;
  for (auto& t : shape)
    if (t.meta.name == "model.layers.0.self_attn.k_proj.weight") t.meta.shape = {32, 16};  // same bytes, transposed
  refused("shape", shape, cfg, m, {"\"model.layers.0.self_attn.k_proj.weight\"", "[32, 16]", "expected [16, 32]"});
  auto extra = ts;
  Tensor bias = named(ts, "model.norm.weight");
  bias.meta.name = "model.layers.0.self_attn.q_proj.bias";
  extra.push_back(bias);
  refused("extra", extra, cfg, m, {"\"model.layers.0.self_attn.q_proj.bias\"", "not part of this run's Llama"});
  auto ints = ts;
  for (auto& t : ints)
    if (t.meta.name == "model.norm.weight") t.meta.dtype = StDType::I32;
  refused("dtype", ints, cfg, m, {"\"model.norm.weight\"", "I32", "expected F32, BF16, F16 or F64"});
  // The run's model against config.json: each differing field by its key and its flag.
  ModelConfig deeper = m;
  deeper.layers = 3;
  refused("layers", ts, cfg, deeper, {"config.json: num_hidden_layers", "2", "has 3", "--layers"});
  refused("rope", ts, config_of("llama_tiny_rope_llama3"), m, {"config.json: rope_scaling", "llama3", "default RoPE"});
  ModelConfig gpt2 = *model_preset("tiny");
  refused("gpt2", ts, cfg, gpt2, {"--init-from", "is GPT-2"});
  // The refused config.json itself.
  auto biased = cfg;
  biased["attention_bias"] = true;
  refused("biased", ts, biased, m, {"config.json: attention_bias", "attention_bias false"});
}

// Import -> export gives save_pretrained's file back: header (names, order, shapes, dtypes, offsets,
// padding) and data, byte for byte. BF16 export -> import -> BF16 export is stable too.
TEST(HfLlamaExport, ImportThenExportIsTheFixturesFileByteForByte) {
  test::TempDir dir;
  for (const char* c : kCases) {
    SCOPED_TRACE(c);
    const ModelConfig m = preset_of(c);
    const auto units = build_unit_layouts(m);
    Diagnostics d;
    auto r = HfLlamaReader::open(fixture(c), units, m, d);
    ASSERT_TRUE(r) << d.format();
    int reads = 0;
    auto read = [&](int u, float* out) {
      ++reads;
      r->read_unit(u, out);
    };
    const std::string out = dir.sub(std::string(c) + ".safetensors");
    {
      FileWriter f(out, false);
      const auto w = write_hf_llama_safetensors(f, m, units, read, StDType::F32, {{"format", "pt"}});
      f.close();
      EXPECT_EQ(w.params, m.total_params());
      EXPECT_EQ(w.tensors, int64_t(2 + 9 * m.layers + (m.tied_embeddings ? 0 : 1)));
    }
    EXPECT_EQ(reads, m.units() + (m.tied_embeddings ? 0 : 1)) << "each unit once, an untied head twice";
    const std::string theirs = read_small_file(fixture(c) + "/model.safetensors");
    const std::string ours = read_small_file(out);
    ASSERT_EQ(ours.size(), theirs.size());
    EXPECT_TRUE(ours == theirs) << "first difference at byte "
                                << std::mismatch(ours.begin(), ours.end(), theirs.begin()).first - ours.begin();
    // BF16: written, imported, written again: the same bytes.
    const std::string bdir = dir.sub(std::string(c) + "_bf16");
    make_directories(bdir);
    {
      FileWriter f(bdir + "/model.safetensors", false);
      write_hf_llama_safetensors(f, m, units, read, StDType::BF16, {{"format", "pt"}});
      f.close();
    }
    auto rb = HfLlamaReader::open(bdir, units, m, d);
    ASSERT_TRUE(rb) << d.format();
    {
      FileWriter f(bdir + "/again.safetensors", false);
      write_hf_llama_safetensors(f, m, units, [&](int u, float* o) { rb->read_unit(u, o); }, StDType::BF16, {{"format", "pt"}});
      f.close();
    }
    EXPECT_TRUE(read_small_file(bdir + "/model.safetensors") == read_small_file(bdir + "/again.safetensors"));
    for (const auto& t : tensors_of(bdir + "/model.safetensors")) EXPECT_EQ(t.meta.dtype, StDType::BF16) << t.meta.name;
  }
}

// The whole path: --init-from into a 2-rank stage-3 run, a checkpoint (whose manifest keeps the
// Llama shape), export --format hf: the fixture's tensors (names, order, shapes, dtypes, bytes) and
// a config.json that reads as the model; only the header's metadata adds the tag and step. The
// checkpoint's --format zerotrain export imports as well.
TEST(HfLlamaExport, InitFromSaveAndExportGiveTheFixturesTensors) {
  for (const char* c : {"llama_tiny", "llama_tiny_tied"}) {
    SCOPED_TRACE(c);
    test::TempDir dir;
    const ModelConfig m = preset_of(c);
    test::run_ranks(2, [&](int rank, Communicator& comm) {
      test::FakeShardedState st(m, 2, rank, 3);
      st.set_counters({{"step", 0}, {"applied_steps", 0}, {"skipped_steps", 0}});
      RankExchange ex(comm);
      init_from_hf_llama(st, ex, fixture(c), m);
      EXPECT_EQ(st.commits, 1);
      SaveOptions o;
      o.dir = dir.sub("ckpt");
      CheckpointWriter w(ex, o);
      RunFacts f;
      f.model = m;
      const auto r = w.save(st, f, "global_step0");
      EXPECT_TRUE(r.ok) << r.message;
    });
    ExportOptions e;
    e.checkpoint = dir.sub("ckpt");
    e.out = dir.sub("hf");
    e.format = "hf";
    const auto r = export_weights(e);
    EXPECT_EQ(r.params, m.total_params());
    const auto theirs = tensors_of(fixture(c) + "/model.safetensors");
    const auto ours = tensors_of(dir.sub("hf/model.safetensors"));
    ASSERT_EQ(ours.size(), theirs.size());
    for (size_t i = 0; i < ours.size(); ++i) {
      EXPECT_EQ(ours[i].meta.name, theirs[i].meta.name);
      EXPECT_EQ(ours[i].meta.shape, theirs[i].meta.shape) << ours[i].meta.name;
      EXPECT_EQ(ours[i].meta.dtype, theirs[i].meta.dtype) << ours[i].meta.name;
      EXPECT_EQ(ours[i].meta.begin, theirs[i].meta.begin) << ours[i].meta.name;
      EXPECT_TRUE(ours[i].bytes == theirs[i].bytes) << ours[i].meta.name;
    }
    const auto cfg = nlohmann::json::parse(read_small_file(dir.sub("hf/config.json")));
    EXPECT_EQ(cfg["architectures"], nlohmann::json({"LlamaForCausalLM"}));
    EXPECT_EQ(cfg["torch_dtype"], "float32");
    Diagnostics d;
    check_same_llama(m, hf_llama_model_config(cfg, "config.json"), "config.json", d);
    EXPECT_FALSE(d.has_errors()) << d.format();
    // And it imports again, into the same buffers.
    EXPECT_EQ(import_units(dir.sub("hf"), m, d), import_units(fixture(c), m, d)) << d.format();
    // --format zerotrain (our names and layout) reads back into the same buffers too.
    e.format = "zerotrain";
    e.out = dir.sub("weights.safetensors");
    EXPECT_EQ(export_weights(e).params, m.total_params());
    EXPECT_EQ(import_units(e.out, m, d), import_units(fixture(c), m, d)) << d.format();
  }
}

// llama_tiny's 97-row file into a model of 128 (untied: embed_tokens and lm_head both) and into the
// tied fixture's 61 into 64: the file's rows as they are, the model's extra rows zero, every other
// value the same as an import at the file's own vocabulary; the export at the recorded vocabulary is
// the fixture's file byte for byte.
TEST(HfLlamaVocabulary, ASmallerFilePadsWithZeroRowsAndExportsItsOwnRows) {
  test::TempDir dir;
  for (const char* c : {"llama_tiny", "llama_tiny_tied"}) {
    SCOPED_TRACE(c);
    const ModelConfig m = preset_of(c);
    ModelConfig big = m;
    big.vocab = m.vocab < 64 ? 64 : 128;
    const auto units = build_unit_layouts(big);
    Diagnostics d;
    auto r = HfLlamaReader::open(fixture(c), units, big, d);
    ASSERT_TRUE(r) << d.format();
    EXPECT_EQ(r->hf_vocab(), m.vocab);
    const auto same = import_units(fixture(c), m, d);
    const auto padded = import_units(fixture(c), big, d);
    ASSERT_FALSE(d.has_errors()) << d.format();
    ASSERT_EQ(padded.size(), same.size());
    const size_t C = size_t(m.dim), V = size_t(m.vocab);
    for (size_t u = 0; u < same.size(); ++u) {
      const UnitLayout& lay = units[u];
      if (lay.kind == UnitKind::Block) {
        EXPECT_EQ(padded[u], same[u]) << lay.name;
        continue;
      }
      for (const auto& t : lay.tensors) {
        const auto* got = padded[u].data() + t.offset;
        const auto* want = same[u].data() + build_unit_layouts(m)[u].offset(t.name);
        const bool vocab_rows = t.name == "wte" || t.name == "lm_head_w";
        const size_t kept = vocab_rows ? V * C : size_t(t.numel);
        EXPECT_TRUE(std::equal(got, got + kept, want)) << lay.name << "." << t.name << ": the file's values";
        for (size_t i = kept; i < size_t(t.numel); ++i) ASSERT_EQ(got[i], 0.0f) << lay.name << "." << t.name << "[" << i << "]";
      }
    }
    const std::string out = dir.sub(std::string(c) + ".safetensors");
    FileWriter f(out, false);
    write_hf_llama_safetensors(f, big, units, [&](int u, float* o) { r->read_unit(u, o); }, StDType::F32,
                               {{"format", "pt"}}, m.vocab);
    f.close();
    EXPECT_TRUE(read_small_file(out) == read_small_file(fixture(c) + "/model.safetensors"));
  }
}

TEST(HfLlamaVocabulary, ALargerFileIsRefusedNamingBothCountsAndTheFlag) {
  test::TempDir dir;
  ModelConfig small = preset_of("llama_tiny");
  small.vocab = 90;
  Diagnostics d;
  // config.json says 97: its key is named once, not again by every vocabulary tensor.
  EXPECT_TRUE(import_units(fixture("llama_tiny"), small, d).empty());
  std::string msg = d.format();
  for (const char* said : {"config.json: vocab_size", "97", "(90;", "--vocab 97 or more"})
    EXPECT_NE(msg.find(said), std::string::npos) << "no \"" << said << "\" in: " << msg;
  EXPECT_EQ(d.error_count(), 1u) << msg;
  // The weights alone (no config.json): the embedding's rows say it.
  const std::string alone = dir.sub("alone");
  make_directories(alone);
  write_file(alone + "/model.safetensors", tensors_of(fixture("llama_tiny") + "/model.safetensors"));
  Diagnostics d2;
  EXPECT_TRUE(import_units(alone, small, d2).empty());
  msg = d2.format();
  for (const char* said : {"\"model.embed_tokens.weight\"", "97 rows", "(90;", "--vocab 97 or more"})
    EXPECT_NE(msg.find(said), std::string::npos) << "no \"" << said << "\" in: " << msg;
}

// The whole path with a padded vocabulary: --init-from returns the file's count, the checkpoint
// records it, and export --format hf writes the fixture's tensors and a config.json of 97 again.
TEST(HfLlamaVocabulary, InitFromSaveAndExportKeepTheFilesVocabulary) {
  test::TempDir dir;
  ModelConfig big = preset_of("llama_tiny");
  big.vocab = 128;
  test::run_ranks(2, [&](int rank, Communicator& comm) {
    test::FakeShardedState st(big, 2, rank, 3);
    st.set_counters({{"step", 0}, {"applied_steps", 0}, {"skipped_steps", 0}});
    RankExchange ex(comm);
    EXPECT_EQ(init_from_hf_llama(st, ex, fixture("llama_tiny"), big), 97);
    SaveOptions o;
    o.dir = dir.sub("ckpt");
    CheckpointWriter w(ex, o);
    RunFacts f;
    f.model = big;
    f.hf_vocab = 97;
    EXPECT_TRUE(w.save(st, f, "global_step0").ok);
  });
  ExportOptions e;
  e.checkpoint = dir.sub("ckpt");
  e.out = dir.sub("hf");
  e.format = "hf";
  export_weights(e);
  const auto theirs = tensors_of(fixture("llama_tiny") + "/model.safetensors");
  const auto ours = tensors_of(dir.sub("hf/model.safetensors"));
  ASSERT_EQ(ours.size(), theirs.size());
  for (size_t i = 0; i < ours.size(); ++i) {
    EXPECT_EQ(ours[i].meta.shape, theirs[i].meta.shape) << ours[i].meta.name;
    EXPECT_TRUE(ours[i].bytes == theirs[i].bytes) << ours[i].meta.name;
  }
  EXPECT_EQ(nlohmann::json::parse(read_small_file(dir.sub("hf/config.json")))["vocab_size"], 97);
  // --format zerotrain keeps all 128 rows and records 97 for the next import.
  e.format = "zerotrain";
  e.out = dir.sub("weights.safetensors");
  export_weights(e);
  Diagnostics d;
  auto r = HfLlamaReader::open(e.out, build_unit_layouts(big), big, d);
  ASSERT_TRUE(r) << d.format();
  EXPECT_EQ(r->hf_vocab(), 97);
}

TEST(HfLlamaInitFrom, FolderDetectionAndTheConfigBesideTheWeights) {
  EXPECT_EQ(hf_weights_dir(fixture("llama_tiny")), fixture("llama_tiny"));
  EXPECT_EQ(hf_weights_dir(fixture("llama_tiny") + "/model.safetensors"), fixture("llama_tiny"));
  test::TempDir dir;
  EXPECT_EQ(hf_weights_dir(dir.path()), "") << "a folder without weights (a zerotrain checkpoint)";
  const auto m = hf_llama_config_at(fixture("llama_tiny_tied"));
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->tied_embeddings);
  EXPECT_EQ(m->vocab, 61);
  // A GPT-2 config.json beside the weights: not ours to read.
  make_directories(dir.sub("gpt2"));
  replace_file_atomically(dir.sub("gpt2/config.json"), R"({"model_type": "gpt2", "n_layer": 2})");
  write_file(dir.sub("gpt2/model.safetensors"), {});
  EXPECT_FALSE(hf_llama_config_at(dir.sub("gpt2")));
  EXPECT_FALSE(hf_llama_config_at(dir.sub("gpt2/model.safetensors")));
}

}  // namespace
}  // namespace zt::ckpt
