// Lamb over flat fp32 spans with DeepSpeed's FusedLamb semantics and a two-phase API, so the
// per-tensor trust ratio can be computed when a tensor is split across ranks' shards.
#pragma once

#include "base/optimizer.h"
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace zt {

// A contiguous run of one tensor inside this rank's shard spans: elements [offset, offset + count)
// belong to tensor `tensor` (an id the engine chooses; the same id on every rank).
struct LambPiece {
  size_t offset = 0;
  size_t count = 0;
  int64_t tensor = 0;
};

// Partial squared norms of one piece, accumulated in double in index order.
struct LambPartial {
  double w_sq = 0.0;  // sum of p^2 (p before this step's update)
  double u_sq = 0.0;  // sum of update^2
};

// The math (FusedLamb, eps outside the sqrt), per element in fp32, moments in Adam's order
// (1 - beta rounded once from double, as in adam.h):
//   g' = g * grad_scale
//   m  = beta1 * m + (1 - beta1) * g'
//   v  = beta2 * v + (1 - beta2) * (g' * g')
//   update = m / (sqrtf(v) + eps) + weight_decay * p
// per tensor: ratio = ||p|| / ||update|| clamped to [min_coeff, max_coeff]; 1 if either norm is 0
// then   p = p - (step_size * ratio) * update,   step_size = float(lr * sqrt(bc2) / bc1)
// (bias correction folded into the step size as FusedLamb does; bc = 1 without bias_correction).
//
// Phase 1: updates m and v (call exactly once per step) and writes partials[i] for pieces[i].
// Pieces must lie inside the spans and not overlap; elements outside every piece (padding) are
// left untouched.
void lamb_phase1(std::span<const float> p, std::span<const float> g, std::span<float> m, std::span<float> v,
                 std::span<const LambPiece> pieces, const LambHyper& h, std::span<LambPartial> partials);

// Between the phases the engine sums the partials of each tensor over its pieces and over ranks
// (an all-reduce of 2 doubles per tensor), then asks for the ratio of each tensor:
float lamb_trust_ratio(double w_sq, double u_sq, const LambHyper& h);

// Phase 2: ratios[i] is the trust ratio of pieces[i]'s tensor. Recomputes the update from the m and
// v written by phase 1 and applies it to p.
void lamb_phase2(std::span<float> p, std::span<const float> m, std::span<const float> v,
                 std::span<const LambPiece> pieces, const LambHyper& h, std::span<const float> ratios);

// Single-process convenience: phase 1, sum partials per tensor id (in piece order), ratios, phase 2.
// Returns the ratio used for each piece.
std::vector<float> lamb_step(std::span<float> p, std::span<const float> g, std::span<float> m, std::span<float> v,
                             std::span<const LambPiece> pieces, const LambHyper& h);

}  // namespace zt
