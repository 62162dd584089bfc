// Named GPT-2 presets. GPT-2 sizes follow the published architecture (vocab 50257, context 1024).
#include "runtime/model/model_config.h"

namespace zt {

static ModelConfig make(const char* name, int layers, int heads, int dim, int vocab, int seq_len) {
  ModelConfig m;
  m.name = name;
  m.layers = layers;
  m.heads = heads;
  m.dim = dim;
  m.vocab = vocab;
  m.seq_len = seq_len;
  return m;
}

static std::vector<ModelConfig> presets() {
  return {
      make("tiny", 2, 2, 16, 61, 8),      // odd vocab on purpose: exercises non-multiple-of-8 paths
      make("small", 4, 4, 128, 256, 64),  // byte-level vocab; learns the built-in data in ~a minute
      make("gpt2-124m", 12, 12, 768, 50257, 1024),
      make("gpt2-350m", 24, 16, 1024, 50257, 1024),
      make("gpt2-774m", 36, 20, 1280, 50257, 1024),
      make("gpt2-1.5b", 48, 25, 1600, 50257, 1024),
  };
}

std::optional<ModelConfig> model_preset(const std::string& name) {
  for (auto& m : presets())
    if (m.name == name) return m;
  return std::nullopt;
}

std::vector<std::string> model_preset_names() {
  std::vector<std::string> names;
  for (auto& m : presets()) names.push_back(m.name);
  return names;
}

}  // namespace zt
