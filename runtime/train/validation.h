// Validation: the loss over the first `windows` windows of a split, in order and sharded over the
// ranks — micro-step k of rank r reads windows (k·W + r)·M .. + M — with the rows past the split
// padded and not counted. The training run's periodic validation and `zerotrain eval` (the whole
// split) are the same call, so their numbers agree when they cover the same windows.
#pragma once

#include <cstdint>

#include "runtime/data/sampler.h"
#include "runtime/engine/engine.h"

namespace zt {

struct ValidationResult {
  Engine::EvalSums sums;
  int64_t windows = 0;  // windows read over every rank
  int micro_steps = 0;  // per rank
};

// Collective. windows is clamped to [1, split.num_windows()].
// g: the ranks and micro-batch rows (its grad_accum is not used); seq_len: the window length.
ValidationResult validate_windows(Engine& engine, const BatchSampler& split, int seq_len, const BatchGeometry& g,
                                  int rank, int64_t windows);

}  // namespace zt
