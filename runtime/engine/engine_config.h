// engine_options_from_config: turns a loaded, valid ds_config (zt::Config) into the engine's
// plain EngineOptions — stage, batch split, precision, optimizer, scheduler, clipping, loss scaling.
#pragma once

#include <cstdint>

#include "runtime/config/config.h"
#include "runtime/engine/engine_options.h"

namespace zt {

// Throws std::invalid_argument (with the config key in the message) for what the config module
// accepts but the engine cannot run yet.
EngineOptions engine_options_from_config(const Config& c, uint64_t seed, bool recompute);

}  // namespace zt
