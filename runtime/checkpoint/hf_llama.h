// Hugging Face Llama weights (LlamaForCausalLM): where each of HF's tensors lies in our unit layout,
// config.json read into a ModelConfig and written from one, a reader of model.safetensors (or a
// sharded set with model.safetensors.index.json) for --init-from, and the writer of the export.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "collectives/rank_exchange.h"
#include "runtime/checkpoint/safetensors.h"
#include "runtime/checkpoint/sharded_state.h"
#include "runtime/common/diagnostics.h"
#include "runtime/model/model_config.h"
#include "runtime/model/unit_layout.h"

namespace zt::ckpt {

// One tensor of HF's state dict and the contiguous range of one of our units that holds it. Our
// stacked matrices are HF's row blocks in order: qkv_w = q_proj, k_proj, v_proj; gate_up_w =
// gate_proj, up_proj. HF's q/k rows are already in rotate-half order, as ours: no permutation.
// model.embed_tokens.weight = embedding.wte, model.layers.N.* = block(N+1), model.norm.weight =
// head.lnf_w, lm_head.weight = head.lm_head_w (untied models only).
struct HfLlamaTensor {
  std::string name;
  int unit = 0;
  int64_t offset = 0;  // elements from the start of the unit's buffer
  std::vector<int64_t> shape;
  int64_t numel() const;
};

// Every HF tensor of this model, sorted by name as save_pretrained writes them (so lm_head.weight
// first, model.layers.10.* before model.layers.2.*). Throws std::invalid_argument for a GPT-2 model.
// vocab_rows in [1, m.vocab) gives the file a smaller vocabulary: embed_tokens and lm_head hold the
// model's first vocab_rows rows (0: the model's vocabulary).
std::vector<HfLlamaTensor> hf_llama_tensors(const ModelConfig& m, const std::vector<UnitLayout>& units,
                                            int64_t vocab_rows = 0);

// config.json (transformers v4 keys, or v5's rope_parameters) as a ModelConfig. Refused, each a
// UserError naming `path`, the key, the value and the fix (all problems at once): a model_type or
// architectures that is not Llama, attention_bias or mlp_bias true, hidden_act other than silu,
// rope_interleaved true, a RoPE type other than default and llama3, missing or mistyped keys, and
// a shape ModelConfig cannot build. Defaults are LlamaConfig's: num_key_value_heads =
// num_attention_heads, head_dim = hidden_size / num_attention_heads, tie_word_embeddings false,
// rms_norm_eps 1e-6, rope_theta 1e4, max_position_embeddings 2048, initializer_range 0.02. The
// context a run trains at (seq_len) is max_position_embeddings capped at kHfLlamaDefaultContext.
inline constexpr int kHfLlamaDefaultContext = 2048;
ModelConfig hf_llama_model_config(const nlohmann::json& config, const std::string& path);

// A v4-style config.json for this model, keys sorted as save_pretrained writes them;
// torch_dtype "float32" or "bfloat16".
nlohmann::ordered_json hf_llama_config(const ModelConfig& m, const std::string& torch_dtype);

// The errors for every field where `run` differs from `file` (the model config.json describes),
// each naming config.json's key, both values and the flag that sets it. seq_len is not compared
// (a run may train at any context up to max_position_embeddings and beyond, as transformers allows).
void check_same_llama(const ModelConfig& run, const ModelConfig& file, const std::string& cfg_path, Diagnostics& d);

// The folder of Hugging Face weights that --init-from `path` names: `path` itself when it is a
// folder holding model.safetensors or model.safetensors.index.json, else the folder of the file
// `path`; "" when `path` is a folder without either (a zerotrain checkpoint).
std::string hf_weights_dir(const std::string& path);

// config.json beside the weights --init-from names, read as a Llama model when it describes one;
// nullopt when there is none or it says GPT-2 (model_type gpt2 or GPT2LMHeadModel). A config.json
// of another model, or bad JSON, is a UserError.
std::optional<ModelConfig> hf_llama_config_at(const std::string& path);

// Llama weights in HF's layout: `path` a folder (model.safetensors, else the shards that
// model.safetensors.index.json's weight_map names), a .safetensors file or an index file. Checked
// before any tensor is read: config.json beside them (when present) describes `model`
// (check_same_llama); every tensor present with its shape and a dtype of F32, BF16, F16 or F64; no
// tensor we do not know (old checkpoints' rotary_emb.inv_freq buffers are ignored); an untied
// model needs lm_head.weight; a tied model's lm_head.weight is ignored when its bytes equal
// embed_tokens' and refused when they differ. A `zerotrain export --format zerotrain` file of a
// Llama model (our names and layout) reads too, without a config.json check.
// A vocabulary smaller than the model's (a model padded for speed, or a tokenizer a fine-tune
// extends: --vocab past the file's) imports: embed_tokens (and an untied lm_head) fill the first
// rows, the rest start at zero, and hf_vocab() says how many the file had, for the export. A larger
// one is refused naming both counts and --vocab.
class HfLlamaReader {
 public:
  static std::unique_ptr<HfLlamaReader> open(const std::string& path, const std::vector<UnitLayout>& units,
                                             const ModelConfig& model, Diagnostics& d);
  // Unit u's numel fp32 values in our layout.
  void read_unit(int u, float* out) const;
  uint64_t bytes_read() const;
  int files() const { return int(files_.size()); }
  // The vocabulary to export the weights with (RunFacts::hf_vocab): the file's when it had fewer
  // rows than the model, or what a zerotrain export file records ("zt.hf_vocab"); 0: the model's.
  int64_t hf_vocab() const { return hf_vocab_; }

 private:
  struct Source {
    const SafetensorsFile* file = nullptr;
    const StTensor* tensor = nullptr;
  };
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, Source> by_name_;
  std::vector<HfLlamaTensor> tensors_;
  std::vector<int64_t> unit_numel_;
  int64_t hf_vocab_ = 0;
};

// --init-from for a Llama model: as init_from_hf (every rank reads the units it needs, writes them
// as "master", then commit(); collective; bad input a UserError on every rank before any write).
// Returns the reader's hf_vocab() (0: nothing padded).
int64_t init_from_hf_llama(ShardedState& state, RankExchange& ex, const std::string& path, const ModelConfig& model);

// Writes HF's model.safetensors for these units to `out`: hf_llama_tensors' names, shapes and
// order, in `dtype` (F32 or BF16), the header's metadata `meta` (transformers needs format=pt).
// read_unit(u, buf) fills unit u's fp32 values; each unit is read once, the head twice (its
// lm_head.weight sorts first, its model.norm.weight last), and only one is held at a time.
// vocab_rows as hf_llama_tensors' (the vocabulary the weights were imported with).
struct HfLlamaWritten {
  int64_t tensors = 0, params = 0, file_bytes = 0, peak_buffer_bytes = 0;
};
HfLlamaWritten write_hf_llama_safetensors(FileWriter& out, const ModelConfig& m, const std::vector<UnitLayout>& units,
                                          const std::function<void(int unit, float* values)>& read_unit,
                                          StDType dtype, const StMetadata& meta, int64_t vocab_rows = 0);

}  // namespace zt::ckpt
