// ModelConfig: a model's architecture family (GPT-2 or Llama) and shape (layers, heads, width, vocab,
// context, and Llama's key/value heads, head width, MLP width, norm epsilon and RoPE), the named
// presets, and exact parameter counts per unit so the memory plan and the engine agree on Ψ.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/rope_table.h"

namespace zt {

// GPT-2: learned positions, LayerNorm with bias, GELU MLP of 4C, biases everywhere, tied head.
// Llama (transformers' LlamaForCausalLM): no position table, RMSNorm, RoPE on q and k,
// grouped-query attention, SwiGLU MLP of `intermediate`, no biases, tied or untied head.
enum class ModelFamily { Gpt2, Llama };
const char* model_family_name(ModelFamily f);  // "gpt2", "llama"

struct ModelConfig {
  std::string name = "custom";
  ModelFamily family = ModelFamily::Gpt2;
  int layers = 2;
  int heads = 2;
  int dim = 16;       // channels C (the residual stream's width)
  int vocab = 64;     // V
  int seq_len = 8;    // maximum context T this run trains at (GPT-2: the rows of wpe)
  bool tied_embeddings = true;  // LM head reuses the token embedding (GPT-2 does; Llama's default is untied)

  // Llama only (GPT-2 leaves them 0 and uses heads = kv heads, dim / heads, 4·dim).
  int kv_heads = 0;       // Hkv: key/value heads; query head h reads kv head h / (heads / kv_heads)
  int head_dim = 0;       // hd; 0: dim / heads
  int intermediate = 0;   // I: the SwiGLU MLP's width
  float norm_eps = 1e-5f;         // RMSNorm epsilon (rms_norm_eps); GPT-2's LayerNorm uses 1e-5 too
  double rope_theta = 10000.0;    // RoPE base
  RopeScaling rope_scaling;       // `default` or `llama3`
  int max_positions = 0;          // config.json's max_position_embeddings (0: seq_len); export only
  float init_std = 0.02f;         // N(0, init_std) for matrices (initializer_range)

  bool llama() const { return family == ModelFamily::Llama; }
  int kv_head_count() const { return kv_heads > 0 ? kv_heads : heads; }
  int head_width() const { return head_dim > 0 ? head_dim : dim / heads; }
  int64_t attention_width() const { return int64_t(heads) * head_width(); }  // H·hd: q rows, o_proj columns
  int64_t qkv_rows() const { return int64_t(heads + 2 * kv_head_count()) * head_width(); }
  int64_t mlp_width() const { return llama() ? intermediate : 4 * int64_t(dim); }
  // The shortest side among a block's matrices as Hugging Face stores them (q, k, v and o
  // projections, the MLP's): the width C, or under grouped-query attention k_proj's and v_proj's
  // Hkv·hd rows (Llama 3.2 1B: 512 of 2048), or a narrower attention or MLP width.
  int64_t shortest_matrix_side() const {
    return std::min({int64_t(dim), attention_width(), int64_t(kv_head_count()) * head_width(), mlp_width()});
  }

  // Parameters of each unit, in walk order: embedding (wte, and GPT-2's wpe), each block, then the
  // head (final norm, plus the LM head matrix when not tied).
  int64_t embedding_params() const {
    return int64_t(vocab) * dim + (llama() ? 0 : int64_t(seq_len) * dim);
  }
  int64_t block_params() const {
    const int64_t C = dim, A = attention_width(), Q = qkv_rows(), I = mlp_width();
    if (llama())
      return C                    // input_layernorm
             + Q * C              // q, k, v projections, stacked
             + C * A              // o_proj
             + C                  // post_attention_layernorm
             + 2 * I * C          // gate and up, stacked
             + C * I;             // down
    return 2 * C                  // ln1 weight, bias
           + C * 3 * C + 3 * C    // qkv projection
           + C * C + C            // attention output projection
           + 2 * C                // ln2
           + C * 4 * C + 4 * C    // MLP fc
           + 4 * C * C + C;       // MLP projection
  }
  int64_t head_params() const {
    return (llama() ? 1 : 2) * int64_t(dim) + (tied_embeddings ? 0 : int64_t(vocab) * dim);
  }
  int64_t total_params() const { return embedding_params() + layers * block_params() + head_params(); }
  // The vocabulary rounded up to a multiple of 128: the LM head's logits rows are this long so its
  // GEMMs see aligned leading dimensions (50257 -> 50304). Only the logits are padded: parameters,
  // Ψ, checksums and checkpoints keep `vocab` (runtime/model/README.md).
  static constexpr int kVocabPadMultiple = 128;
  int padded_vocab() const { return (vocab + kVocabPadMultiple - 1) / kVocabPadMultiple * kVocabPadMultiple; }
  int units() const { return layers + 2; }
};

// What is wrong with this shape for its family (heads dividing dim, kv heads dividing heads, an even
// head width, ...), one sentence each naming the field; empty when it can be built.
std::vector<std::string> model_shape_problems(const ModelConfig& m);

// Named presets: tiny (tests), small (CPU demo), gpt2-124m, gpt2-350m, gpt2-774m, gpt2-1.5b;
// llama-tiny, llama-tiny-tied, llama-tiny-rope-llama3 (tests: the shapes of tests/data/llama's
// transformers fixtures), smollm2-135m (as its public config), tinyllama-1.1b, llama-3.2-1b.
std::optional<ModelConfig> model_preset(const std::string& name);
std::vector<std::string> model_preset_names();

}  // namespace zt
