// sum_squares (fixed order), all_finite, and DeepSpeed's clip coefficient.
#include "optim/grad_clip.h"

#include <cstdint>
#include <cstring>
#include <vector>

namespace zt {

namespace {

double block_sum_squares(const float* x, size_t n) {
  double a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) a[j] += static_cast<double>(x[i + j]) * static_cast<double>(x[i + j]);
  for (int j = 0; i < n; ++i, ++j) a[j] += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

}  // namespace

double sum_squares(std::span<const float> x) {
  const size_t n = x.size();
  const size_t nblocks = (n + kSumSquaresBlock - 1) / kSumSquaresBlock;
  if (nblocks <= 1) return block_sum_squares(x.data(), n);
  std::vector<double> partial(nblocks);
  const long long nb = static_cast<long long>(nblocks);
#pragma omp parallel for schedule(static) if (nb >= 16)
  for (long long b = 0; b < nb; ++b) {
    const size_t lo = static_cast<size_t>(b) * kSumSquaresBlock;
    const size_t len = lo + kSumSquaresBlock <= n ? kSumSquaresBlock : n - lo;
    partial[b] = block_sum_squares(x.data() + lo, len);
  }
  double total = 0.0;
  for (double s : partial) total += s;
  return total;
}

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
