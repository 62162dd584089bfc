// QuantError: what a quantized collective measured about itself over a span (a step) — the sampled
// error of its dequantized values relative to each block's absmax, the blocks it quantized and
// refused, and its time quantizing and dequantizing. qwZ's gathers and qgZ's reductions each keep one.
#pragma once

#include <cstddef>
#include <cstdint>

namespace zt {

struct QuantError {
  double max_rel = 0;       // max |deq - x| / absmax of its block over the sampled elements
  double sum_sq_rel = 0;    // sum of the squares of the same ratio
  uint64_t elements = 0;    // sampled elements (a zero block counts: its error is 0)
  uint64_t calls = 0;       // quantized collectives issued (gathers, or bucket reductions)
  uint64_t blocks = 0;      // blocks quantized by this rank
  uint64_t bad_blocks = 0;  // blocks refused for holding an inf or NaN (NaN after the collective)
  uint64_t exact_elements = 0;  // elements sent unquantized instead (qgZ's 1-D tensors)
  uint64_t level_bytes = 0;     // this rank's algorithm bytes of the calls: the quantized levels,
  uint64_t scale_bytes = 0;     // and the scales (each padded to whole words), as counted per op
  double quantize_s = 0;    // this rank's time quantizing
  double dequantize_s = 0;  // and dequantizing (summing, rounding), sampling included
  double rms_rel() const;
  void add(const QuantError& o);

  // Sampling: every `every`-th block a rank quantizes, counted across calls; a call whose first
  // block is the `before`-th samples from this block of its own on.
  static size_t first_sampled_block(uint64_t before, uint64_t every) { return size_t((every - before % every) % every); }
  // A block's absmax, or false when it holds an inf or NaN (a refused block: counted as bad, not sampled).
  static bool finite_absmax(const float* x, size_t n, double& absmax);
  // One sampled block of n elements: |deq - x| / absmax of each.
  void add_sample(const float* x, const float* deq, size_t n, double absmax);
};

}  // namespace zt
