// engine_options_from_config: turns a loaded, valid ds_config (zt::Config) into the engine's
// plain EngineOptions — stage, batch split, precision, optimizer, scheduler, clipping, loss scaling.
// EngineOptions::zero is taken as it is from validation's zero_option_set
// (runtime/config/validate_engine.cpp), which reads the zero_optimization keys once.
#pragma once

#include <cstdint>

#include "runtime/config/config.h"
#include "runtime/engine/engine_options.h"
#include "runtime/model/model_config.h"

namespace zt {

// `c` must have passed load_config (validation is where every user error is reported; this mapping
// refuses nothing). DeepSpeed's zero sizes become the sizes with the same meaning for `model`
// (runtime/config/zero_sizes.h); offload_optimizer.ratio 0 becomes no optimizer offload; stage 0
// scales fp16 losses like DeepSpeed's FP16_Optimizer, stages 1-3 like its ZeRO optimizers.
EngineOptions engine_options_from_config(const Config& c, uint64_t seed, bool recompute,
                                         const ModelConfig* model = nullptr);

}  // namespace zt
