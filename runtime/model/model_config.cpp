// Named presets. GPT-2 sizes follow the published architecture (vocab 50257, context 1024); the
// Llama sizes follow the public config.json of each checkpoint (context: what a run trains at).
#include "runtime/model/model_config.h"

namespace zt {

const char* model_family_name(ModelFamily f) { return f == ModelFamily::Llama ? "llama" : "gpt2"; }

static ModelConfig make(const char* name, int layers, int heads, int dim, int vocab, int seq_len) {
  return ModelConfig{.name = name, .layers = layers, .heads = heads, .dim = dim, .vocab = vocab, .seq_len = seq_len};
}

struct LlamaShape {
  int kv_heads, head_dim, intermediate;
  bool tied;
  double theta;
  int max_positions;
  float init_std;
  float norm_eps = 1e-5f;
};

static ModelConfig make_llama(const char* name, int layers, int heads, int dim, int vocab, int seq_len,
                              const LlamaShape& s, RopeScaling scaling = {}) {
  return ModelConfig{.name = name,
                     .family = ModelFamily::Llama,
                     .layers = layers,
                     .heads = heads,
                     .dim = dim,
                     .vocab = vocab,
                     .seq_len = seq_len,
                     .tied_embeddings = s.tied,
                     .kv_heads = s.kv_heads,
                     .head_dim = s.head_dim,
                     .intermediate = s.intermediate,
                     .norm_eps = s.norm_eps,
                     .rope_theta = s.theta,
                     .rope_scaling = scaling,
                     .max_positions = s.max_positions,
                     .init_std = s.init_std};
}

static RopeScaling llama3_scaling(double factor, int original_max) {
  RopeScaling r;
  r.type = RopeScaling::Type::Llama3;
  r.factor = factor;
  r.low_freq_factor = 1.0;
  r.high_freq_factor = 4.0;
  r.original_max_position_embeddings = original_max;
  return r;
}

static std::vector<ModelConfig> presets() {
  // The test shapes are tests/data/llama's fixtures, one preset each (vocab 97: not a multiple of
  // 128; 2 kv heads for 4 query heads; the tied one 1 kv head for 3, eps 1e-6); the llama3 one's L0
  // of 64 keeps one of its four frequencies, interpolates one and divides two by the factor; its
  // context of 40 is the fixture's.
  const LlamaShape tiny{2, 8, 80, false, 10000.0, 256, 0.2f};
  const LlamaShape tiny_tied{1, 8, 64, true, 500000.0, 256, 0.2f, 1e-6f};
  return {
      make("tiny", 2, 2, 16, 61, 8),      // odd vocab on purpose: exercises non-multiple-of-8 paths
      make("small", 4, 4, 128, 256, 64),  // byte-level vocab; learns the built-in data in ~a minute
      make("gpt2-124m", 12, 12, 768, 50257, 1024),
      make("gpt2-350m", 24, 16, 1024, 50257, 1024),
      make("gpt2-774m", 36, 20, 1280, 50257, 1024),
      make("gpt2-1.5b", 48, 25, 1600, 50257, 1024),
      make_llama("llama-tiny", 2, 4, 32, 97, 16, tiny),
      make_llama("llama-tiny-tied", 2, 3, 24, 61, 16, tiny_tied),
      make_llama("llama-tiny-rope-llama3", 2, 4, 32, 97, 40, tiny, llama3_scaling(8.0, 64)),
      make_llama("smollm2-135m", 30, 9, 576, 49152, 2048, {3, 64, 1536, true, 100000.0, 8192, 0.041666f}),
      make_llama("tinyllama-1.1b", 22, 32, 2048, 32000, 2048, {4, 64, 5632, false, 10000.0, 2048, 0.02f}),
      make_llama("llama-3.2-1b", 16, 32, 2048, 128256, 2048, {8, 64, 8192, true, 500000.0, 131072, 0.02f},
                 llama3_scaling(32.0, 8192)),
  };
}

std::vector<std::string> model_shape_problems(const ModelConfig& m) {
  std::vector<std::string> p;
  auto n = [](int v) { return std::to_string(v); };
  if (m.layers < 1) p.push_back("layers " + n(m.layers) + " must be at least 1");
  if (m.heads < 1) p.push_back("heads " + n(m.heads) + " must be at least 1");
  if (m.dim < 1) p.push_back("dim " + n(m.dim) + " must be at least 1");
  if (m.vocab < 2) p.push_back("vocab " + n(m.vocab) + " must be at least 2");
  if (m.seq_len < 1) p.push_back("seq_len " + n(m.seq_len) + " must be at least 1");
  if (!p.empty()) return p;
  if (!m.llama()) {
    if (m.dim % m.heads != 0) p.push_back("dim " + n(m.dim) + " must be divisible by heads " + n(m.heads));
    return p;
  }
  if (m.kv_head_count() < 1 || m.heads % m.kv_head_count() != 0)
    p.push_back("kv_heads " + n(m.kv_heads) + " must divide heads " + n(m.heads));
  if (m.head_dim == 0 && m.dim % m.heads != 0)
    p.push_back("dim " + n(m.dim) + " must be divisible by heads " + n(m.heads) + " (or give head_dim)");
  else if (m.head_width() < 2 || m.head_width() % 2 != 0)
    p.push_back("head_dim " + n(m.head_width()) + " must be even and at least 2 (RoPE rotates pairs)");
  if (m.intermediate < 1) p.push_back("intermediate " + n(m.intermediate) + " must be at least 1");
  if (!(m.norm_eps > 0.f)) p.push_back("norm_eps " + std::to_string(m.norm_eps) + " must be positive");
  if (!(m.rope_theta > 0.0)) p.push_back("rope_theta " + std::to_string(m.rope_theta) + " must be positive");
  return p;
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
