// sum_squares (fixed order), all_finite, and DeepSpeed's clip coefficient.
#include "optim/grad_clip.h"

#include "base/fixed_order_sum.h"

#include <cstdint>
#include <cstring>
#include <vector>

namespace zt {

double sum_squares(std::span<const float> x) { return sum_squares_fixed(x.data(), x.size()); }

bool all_finite(std::span<const float> x) {
  const long long n = static_cast<long long>(x.size());
  const float* d = x.data();
  int bad = 0;
#pragma omp parallel for schedule(static) reduction(| : bad) if (n > (1 << 16))
  for (long long i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, d + i, sizeof bits);
    bad |= (bits & 0x7f800000u) == 0x7f800000u;  // exponent all ones: inf or nan
  }
  return bad == 0;
}

double clip_coefficient(double global_norm, double max_norm) {
  if (max_norm <= 0.0) return 1.0;
  const double c = max_norm / (global_norm + 1e-6);
  return c < 1.0 ? c : 1.0;
}

double unscale_and_clip_multiplier(double scaled_norm, double loss_scale, double max_norm) {
  double combined = loss_scale;
  if (max_norm > 0.0) {
    const double clip = ((scaled_norm / loss_scale) + 1e-6) / max_norm;
    if (clip > 1.0) combined = clip * loss_scale;
  }
  return 1.0 / combined;
}

}  // namespace zt
