// Adam / AdamW over flat fp32 spans: the reference step, and the exact per-element operation order
// every Adam path (SIMD CPU Adam, fused GPU AdamW) follows so that all of them agree bitwise.
#pragma once

#include <cmath>
#include <cstddef>
#include <span>
#include <string>

#include "base/adam_math.h"

namespace zt {

// DeepSpeed's adam_w_mode: type "AdamW" is always decoupled; type "Adam" is AdamW unless
// adam_w_mode is false (then weight decay is L2: wd * p added to the gradient).
inline bool adam_decoupled(const std::string& type, bool adam_w_mode) { return type == "AdamW" || adam_w_mode; }

// The per-element formula and the per-step scalars are base/adam_math.h's (adam_scalars,
// adam_update_element): every Adam path in the tree uses them.

// One Adam/AdamW step over a shard: p, g, m, v are the same length (std::invalid_argument if not).
// Element-wise, so the result does not depend on the thread count or on how the span is split.
void adam_step(std::span<float> p, std::span<const float> g, std::span<float> m, std::span<float> v,
               const AdamWHyper& h);

}  // namespace zt
