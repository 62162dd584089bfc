// Gradient-norm helpers for the step: a squared L2 norm in double with a fixed summation order,
// the non-finite (inf/nan) check used for overflow detection, and DeepSpeed's clip coefficient.
#pragma once

#include <cstddef>
#include <span>

namespace zt {

// Sum of x^2 over the span, in double, in base/fixed_order_sum.h's order (fixed by the span alone,
// the same for every thread count; the backends' sum_squares use it too). A non-finite
// element makes the result inf or nan (squares of finite fp32 values cannot overflow a double), so
// !std::isfinite(sum) doubles as the overflow check after the all-reduce.
// Across ranks the engine adds per-shard sums; that total depends on where the shard boundaries
// fall only through the rounding of those few double additions (relative ~1e-16).
double sum_squares(std::span<const float> x);

// True when every element is finite (no inf, no nan).
bool all_finite(std::span<const float> x);

// DeepSpeed's clip: coefficient = max_norm / (norm + 1e-6), applied only when it is < 1; returns 1
// when clipping is off (max_norm <= 0) or not needed. Multiply the gradients by the result.
double clip_coefficient(double global_norm, double max_norm);

// The single multiplier for the optimizer's grad_scale that unscales fp16 gradients and clips them,
// as DeepSpeed's ZeRO optimizer folds it: with norm = scaled_norm / loss_scale (the true norm),
//   combined = loss_scale;  if max_norm > 0 and (norm + 1e-6) / max_norm > 1:
//   combined = loss_scale * (norm + 1e-6) / max_norm;   returns 1 / combined.
// With loss_scale 1 this equals clip_coefficient(scaled_norm, max_norm) up to rounding.
double unscale_and_clip_multiplier(double scaled_norm, double loss_scale, double max_norm);

}  // namespace zt
