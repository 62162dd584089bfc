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

}  // namespace zt
