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

// A Llama shape the overrides broke (kv heads not dividing --heads, an odd head width, ...): one
// error per problem, each naming the override flag its field comes from (the preset's own fields
// are --model's).
void check_llama_overrides(const ModelFlags& f, const ModelConfig& m) {
  const std::vector<std::string> problems = model_shape_problems(m);
  if (problems.empty()) return;
  auto value_of = [](const std::optional<int>& v) { return std::to_string(*v); };
  Diagnostics d;
  for (const std::string& p : problems) {
    const auto starts = [&](const char* field) { return p.rfind(field, 0) == 0; };
    // kv_heads, head_dim and dim's "divisible by heads" follow --heads (and --dim) when given
    if (starts("layers ") && f.layers) d.error("--layers", value_of(f.layers), p, "pass --layers 1 or more");
    else if (starts("vocab ") && f.vocab) d.error("--vocab", value_of(f.vocab), p, "pass --vocab 2 or more");
    else if (starts("seq_len ") && f.seq_len) d.error("--seq-len", value_of(f.seq_len), p, "pass --seq-len 1 or more");
    else if ((starts("dim ") || starts("head_dim ")) && f.dim)
      d.error("--dim", value_of(f.dim), p, "pick a width that is a multiple of the heads with an even quotient");
    else if ((starts("heads ") || starts("kv_heads ") || starts("head_dim ") || starts("dim ")) && f.heads)
      d.error("--heads", value_of(f.heads), p,
              "pick a head count that is a multiple of the preset's " + std::to_string(m.kv_head_count()) +
                  " key/value heads and divides the width into an even head width");
    else
      d.error("--model", f.preset, p, "drop or change the overrides that break the preset's shape");
  }
  throw UserError(std::move(d));
}

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
  // A Llama preset whose head width is dim / heads keeps that rule under --heads / --dim
  // (head_dim 0: derived); one with its own head width keeps the width.
  if (m.llama() && (f.heads || f.dim) && int64_t(m.head_dim) * m.heads == m.dim) m.head_dim = 0;
  if (f.heads) m.heads = *f.heads;
  if (f.dim) m.dim = *f.dim;
  if (f.vocab) m.vocab = *f.vocab;
  if (f.seq_len) m.seq_len = *f.seq_len;
  if (f.layers || f.heads || f.dim || f.vocab || f.seq_len) m.name = f.preset + "+custom";
  if (f.untied) m.tied_embeddings = false;
  if (m.llama()) check_llama_overrides(f, m);
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
