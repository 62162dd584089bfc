// load_config: reads a ds_config file into a typed Config, resolving "auto" from flags and the
// batch equation, and collecting every error and warning (it never stops at the first).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/common/diagnostics.h"
#include "runtime/config/auto_flags.h"
#include "runtime/config/config.h"
#include "runtime/model/model_config.h"

namespace zt {

// The largest config file read (a ds_config is a few kilobytes).
inline constexpr uint64_t kMaxConfigBytes = uint64_t(16) << 20;

enum class WorldSizeSource { Default, Flag, Launch };

// The backend the run computes on: validation refuses what that backend cannot run.
enum class ComputeBackend { Cpu, Cuda };
const char* compute_backend_name(ComputeBackend b);

struct LoadOptions {
  int world_size = 1;
  WorldSizeSource world_source = WorldSizeSource::Default;  // from the launch (MPI size) or --world-size
  AutoFlags flags;
  bool allow_unknown_keys = false;       // unknown keys become warnings
  std::optional<int64_t> model_hidden;   // hidden size: resolves "auto" bucket sizes like the HF Trainer
  bool size_without_shape = false;       // --params named a size but no hidden size (for the message)
  std::optional<ModelConfig> model;      // the model to be trained, when known: shard-size checks
  ComputeBackend backend = ComputeBackend::Cpu;
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
void resolve_run_length(Config& c, const LoadOptions& opts, Diagnostics& d);             // auto_resolve.cpp
void resolve_batch(Config& c, int world_size, WorldSizeSource src, Diagnostics& d);     // batch.cpp
void validate_config(Config& c, const LoadOptions& opts, Diagnostics& d);               // validate.cpp
// nvme_path on this machine: exists, is a writable local directory (validate.cpp; part of validation
// when opts.probe_paths, else of `check`'s "fits here" section).
void check_nvme_paths_here(const Config& c, Diagnostics& d);
// What the engine can run on opts.backend for opts.model: the checks the engine would otherwise make
// one at a time when it starts (validate_engine.cpp).
void validate_for_engine(const Config& c, const LoadOptions& opts, Diagnostics& d);

}  // namespace zt
