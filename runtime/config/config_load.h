// load_config: reads a ds_config file into a typed Config, resolving "auto" from flags and the
// batch equation, and collecting every error and warning (it never stops at the first).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/common/diagnostics.h"
#include "runtime/config/auto_flags.h"
#include "runtime/config/config.h"

namespace zt {

enum class WorldSizeSource { Default, Flag, Launch };

struct LoadOptions {
  int world_size = 1;
  WorldSizeSource world_source = WorldSizeSource::Default;  // from the launch (MPI size) or --world-size
  AutoFlags flags;
  bool allow_unknown_keys = false;       // unknown keys become warnings
  std::optional<int64_t> model_hidden;   // hidden size: resolves "auto" bucket sizes like the HF Trainer
  bool probe_paths = true;               // check nvme_path on this machine (statfs)
};

struct LoadResult {
  Config config;
  Diagnostics diagnostics;
  bool valid() const { return !diagnostics.has_errors(); }
};

// Never throws for bad input: a missing file, bad JSON or bad values all end up in diagnostics.
LoadResult load_config(const std::string& path, const LoadOptions& opts);
// The same, from text in memory; `name` stands for the file in messages.
LoadResult load_config_text(const std::string& text, const std::string& name, const LoadOptions& opts);

// Steps of load_config, exposed for tests and the training command.
void resolve_auto(Config& c, const LoadOptions& opts, Diagnostics& d);                   // auto_resolve.cpp
void resolve_batch(Config& c, int world_size, WorldSizeSource src, Diagnostics& d);     // batch.cpp
void validate_config(Config& c, const LoadOptions& opts, Diagnostics& d);               // validate.cpp

}  // namespace zt
