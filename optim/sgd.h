// SGD over flat fp32 spans with PyTorch's semantics: weight decay (L2), momentum with dampening,
// and Nesterov momentum; the exact per-element operation order is written out below.
#pragma once

#include "base/optimizer.h"
#include <cstddef>
#include <span>

namespace zt {

// Per element, every operation rounded to fp32 (one_minus_damp = 1.0f - dampening):
//   g' = g * grad_scale
//   g' = g' + weight_decay * p                  (when weight_decay != 0)
//   momentum != 0:  buf = (step == 1) ? g' : momentum * buf + one_minus_damp * g'
//                   g'  = nesterov ? g' + momentum * buf : buf
//   p = p - lr * g'
// `buf` may be empty when momentum == 0 (no state); otherwise it has p's length.
// Throws std::invalid_argument on mismatched lengths or an invalid Nesterov setting.
void sgd_step(std::span<float> p, std::span<const float> g, std::span<float> buf, const SgdHyper& h);

}  // namespace zt
