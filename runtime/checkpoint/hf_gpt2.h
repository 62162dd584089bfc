// Hugging Face GPT-2 weights: the name and layout of each of our tensors in GPT2LMHeadModel's state
// dict, its config.json, and a reader of such a safetensors file into our unit layout (--init-from).
#pragma once

#include <cstdint>
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

// HF's name for our tensor, and whether the layouts differ by a transpose: HF's Conv1D stores
// [in, out] where our linear weights are [out, in] (qkv_w, attproj_w, fc_w, fcproj_w).
// embedding.wte -> transformer.wte.weight, block3.qkv_w -> transformer.h.3.attn.c_attn.weight,
// head.lnf_w -> transformer.ln_f.weight, head.lm_head_w -> lm_head.weight (untied models only).
struct HfName {
  std::string name;
  bool transpose = false;
};
HfName hf_gpt2_name(const UnitLayout& unit, const TensorView& t);
std::vector<int64_t> hf_shape(const TensorView& t, bool transpose);

// config.json for GPT2LMHeadModel with this shape (gelu_new, layer_norm_epsilon 1e-5, no dropout).
nlohmann::ordered_json hf_gpt2_config(const ModelConfig& m);

// A GPT-2 safetensors file in the HF layout (with or without the "transformer." prefix) or as
// `zerotrain export --format zerotrain` writes it (our names and layout), checked
// against our units: every tensor present with the right shape (transposed where HF's is), dtype
// F32, F16, BF16 or F64; the causal-mask buffers (attn.bias, attn.masked_bias) are ignored. A
// config.json beside the file is checked against `model` (heads, activation, epsilon, tying).
// A wte (and untied lm_head.weight) with fewer rows than the model's vocab imports: the rows past
// the file's vocabulary start at zero (HF's 50257 into a model whose vocab is 50304).
class HfGpt2Reader {
 public:
  static std::unique_ptr<HfGpt2Reader> open(const std::string& path, const std::vector<UnitLayout>& units,
                                            const ModelConfig& model, Diagnostics& d);
  // Unit u's numel fp32 values in our layout (transposed back where needed).
  void read_unit(int u, float* out) const;
  uint64_t bytes_read() const { return file_->bytes_read(); }
  int64_t file_vocab() const { return file_vocab_; }  // rows of the file's wte
  // The vocabulary to export the weights with (RunFacts::hf_vocab): the file's when it had fewer
  // rows than the model, or what a zerotrain export file records ("zt.hf_vocab"); 0: the model's.
  int64_t hf_vocab() const { return hf_vocab_; }

 private:
  HfName source(const UnitLayout& u, const TensorView& t) const;  // the file's name for our tensor
  std::unique_ptr<SafetensorsFile> file_;
  const std::vector<UnitLayout>* units_ = nullptr;
  std::string prefix_;  // "transformer." or ""
  bool ours_ = false;   // zerotrain's names ("block0.qkv_w"), no transposes
  int64_t file_vocab_ = 0, model_vocab_ = 0, hf_vocab_ = 0;
};

// --init-from FILE: every rank reads the units it needs and writes them as "master" (the
// optimizer state stays fresh, counters untouched), then commit(). Collective; bad input is a
// UserError on every rank before any write. Returns the reader's hf_vocab() (0: nothing padded).
int64_t init_from_hf(ShardedState& state, RankExchange& ex, const std::string& path, const ModelConfig& model);

// GPT-2's --init-from: a file, or a Hugging Face folder's model.safetensors.
std::string hf_gpt2_weights_file(const std::string& path);

// Converts n values of a safetensors dtype (F32, F16, BF16, F64) to fp32.
void to_f32(StDType t, const void* src, int64_t n, float* dst);

// The vocabulary a zerotrain export of imported weights records ("zt.hf_vocab" in its header's
// metadata; either family): 0 when absent, else a count in [1, model_vocab], or an error in `d`
// naming `path`, the value and `fix` (and -1).
int64_t recorded_hf_vocab(const SafetensorsFile& file, const std::string& path, int model_vocab, const std::string& fix,
                          Diagnostics& d);

}  // namespace zt::ckpt
