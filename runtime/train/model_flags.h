// ModelFlags: the command line's model shape (--model PRESET and its overrides), shared by the
// training run and the commands that build a model from weights (sample).
#pragma once

#include <optional>
#include <string>

#include "runtime/model/model_config.h"

namespace CLI {
class App;
}

namespace zt {

struct ModelFlags {
  std::string preset = "small";
  std::optional<int> layers, heads, dim, vocab, seq_len;
  bool untied = false;
  bool any_given(const CLI::App& app) const;  // was any of these flags on the command line
};

void add_model_flags(CLI::App& app, ModelFlags& flags);
// The preset with the overrides applied; zt::UserError for an unknown preset.
ModelConfig resolve_model(const ModelFlags& flags);
// The model of a run whose --init-from weights describe their shape (`described`, read from the
// Hugging Face config.json at `cfg_path`), as from_pretrained takes it: without --model it is
// theirs, --seq-len applied and any other shape flag checked against it; with --model, the preset
// and its overrides checked against it. A mismatch is a UserError naming the key and the flag.
ModelConfig resolve_model(const ModelFlags& flags, const CLI::App& app, const ModelConfig& described,
                          const std::string& cfg_path);

}  // namespace zt
