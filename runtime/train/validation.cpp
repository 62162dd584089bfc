// validate_windows: every rank runs the same number of micro-steps (a collective walk); a row whose
// window lies past the split reads token 0 with every target ignored.
#include "runtime/train/validation.h"

#include <algorithm>
#include <vector>

namespace zt {

ValidationResult validate_windows(Engine& engine, const BatchSampler& split, int seq_len, const BatchGeometry& g,
                                  int rank, int64_t windows) {
  const int world_size = g.world_size, micro_batch = g.micro_batch, T = seq_len;
  ValidationResult r;
  r.windows = std::clamp<int64_t>(windows, 1, split.num_windows());
  const int64_t per_micro_step = int64_t(world_size) * micro_batch;
  r.micro_steps = int((r.windows + per_micro_step - 1) / per_micro_step);
  r.sums = engine.evaluate(
      [&](int micro, int32_t* tokens, int32_t* targets) {
        const int64_t first = (int64_t(micro) * world_size + rank) * micro_batch;
        const int real = int(std::clamp<int64_t>(r.windows - first, 0, micro_batch));
        if (real > 0) split.fill_sequential(first, real, tokens, targets);
        std::fill(tokens + size_t(real) * T, tokens + size_t(micro_batch) * T, 0);
        std::fill(targets + size_t(real) * T, targets + size_t(micro_batch) * T, -1);
      },
      r.micro_steps);
  return r;
}

}  // namespace zt
