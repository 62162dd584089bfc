// ModelConfig: the GPT-2 architecture's shape (layers, heads, width, vocab, context) and the named
// presets, with exact parameter counts per unit so the memory plan and the engine agree on Ψ.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace zt {

struct ModelConfig {
  std::string name = "custom";
  int layers = 2;
  int heads = 2;
  int dim = 16;       // channels C; must divide by heads
  int vocab = 64;     // V
  int seq_len = 8;    // maximum context T
  bool tied_embeddings = true;  // LM head reuses the token embedding (GPT-2 does)

  // Parameters of each unit, in walk order: embedding (wte, wpe), each block, then the head
  // (final LayerNorm, plus the LM head matrix when not tied).
  int64_t embedding_params() const { return int64_t(vocab) * dim + int64_t(seq_len) * dim; }
  int64_t block_params() const {
    const int64_t C = dim;
    return 2 * C                  // ln1 weight, bias
           + C * 3 * C + 3 * C    // qkv projection
           + C * C + C            // attention output projection
           + 2 * C                // ln2
           + C * 4 * C + 4 * C    // MLP fc
           + 4 * C * C + C;       // MLP projection
  }
  int64_t head_params() const {
    return 2 * int64_t(dim) + (tied_embeddings ? 0 : int64_t(vocab) * dim);
  }
  int64_t total_params() const { return embedding_params() + layers * block_params() + head_params(); }
  // The vocabulary rounded up to a multiple of 128: the LM head's logits rows are this long so its
  // GEMMs see aligned leading dimensions (50257 -> 50304). Only the logits are padded: parameters,
  // Ψ, checksums and checkpoints keep `vocab` (runtime/model/README.md).
  static constexpr int kVocabPadMultiple = 128;
  int padded_vocab() const { return (vocab + kVocabPadMultiple - 1) / kVocabPadMultiple * kVocabPadMultiple; }
  int units() const { return layers + 2; }
};

// Named presets: tiny (tests), small (CPU demo), gpt2-124m, gpt2-350m, gpt2-774m, gpt2-1.5b.
std::optional<ModelConfig> model_preset(const std::string& name);
std::vector<std::string> model_preset_names();

}  // namespace zt
