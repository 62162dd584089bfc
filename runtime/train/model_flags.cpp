// ModelFlags: the preset table's names in the help text; overrides rename the model "PRESET+custom".
#include "runtime/train/model_flags.h"

#include <CLI/CLI.hpp>

#include "runtime/checkpoint/hf_llama.h"
#include "runtime/common/diagnostics.h"

namespace zt {

namespace {

std::string preset_list() {
  std::string s;
  for (const auto& n : model_preset_names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

const char* const kModelFlagNames[] = {"--model", "--layers", "--heads", "--dim", "--vocab", "--seq-len",
                                       "--untied-embeddings"};

}  // namespace

bool ModelFlags::any_given(const CLI::App& app) const {
  for (const char* name : kModelFlagNames)
    if (app.count(name) > 0) return true;
  return false;
}

void add_model_flags(CLI::App& app, ModelFlags& f) {
  app.add_option("--model", f.preset, "Model preset: " + preset_list())->capture_default_str();
  app.add_option("--layers", f.layers, "Override the preset's number of blocks");
  app.add_option("--heads", f.heads, "Override the preset's attention heads");
  app.add_option("--dim", f.dim, "Override the preset's width (divisible by --heads)");
  app.add_option("--vocab", f.vocab, "Override the preset's vocabulary size");
  app.add_option("--seq-len", f.seq_len, "Override the preset's context length");
  app.add_flag("--untied-embeddings", f.untied, "Give the LM head its own matrix instead of reusing wte");
}

ModelConfig resolve_model(const ModelFlags& f) {
  auto preset = model_preset(f.preset);
  if (!preset) throw UserError("--model", f.preset, "unknown model preset", "use one of: " + preset_list());
  ModelConfig m = *preset;
  if (f.layers) m.layers = *f.layers;
  if (f.heads) m.heads = *f.heads;
  if (f.dim) m.dim = *f.dim;
  if (f.vocab) m.vocab = *f.vocab;
  if (f.seq_len) m.seq_len = *f.seq_len;
  if (f.layers || f.heads || f.dim || f.vocab || f.seq_len) m.name = f.preset + "+custom";
  if (f.untied) m.tied_embeddings = false;
  return m;
}

ModelConfig resolve_model(const ModelFlags& f, const CLI::App& app, const ModelConfig& described, const std::string& cfg_path) {
  ModelConfig m = described;
  if (app.count("--model") > 0) {
    m = resolve_model(f);
  } else {
    if (f.layers) m.layers = *f.layers;
    if (f.heads) m.heads = *f.heads;
    if (f.dim) m.dim = *f.dim;
    if (f.vocab) m.vocab = *f.vocab;
    if (f.untied) m.tied_embeddings = false;
  }
  if (f.seq_len) m.seq_len = *f.seq_len;
  Diagnostics d;
  ckpt::check_same_llama(m, described, cfg_path, d);
  if (d.has_errors()) throw UserError(d);
  return m;
}

}  // namespace zt
