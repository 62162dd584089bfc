// sum_squares_fixed: the sum of squares the global gradient norm is made of, in double, in an order
// fixed by the span alone (never by the thread count). The CPU backend and optim/ both use it.
#pragma once

#include <cstddef>
#include <vector>

namespace zt {

// Block size of the fixed order.
inline constexpr size_t kSumSquaresBlock = 4096;

// Σ (x_i · scale)² where x_i · scale is rounded to fp32 first (scale 1 changes nothing). Inside a
// block of kSumSquaresBlock elements, element i goes to accumulator i % 8; the accumulators are
// added as ((a0+a1)+(a2+a3))+((a4+a5)+(a6+a7)); block sums are added in block order. A non-finite
// element makes the result inf or nan (fp32 squares cannot overflow a double).
inline double block_sum_squares(const float* x, size_t n, float scale) {
  double a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) {
      const float y = x[i + j] * scale;
      a[j] += static_cast<double>(y) * static_cast<double>(y);
    }
  for (int j = 0; i < n; ++i, ++j) {
    const float y = x[i] * scale;
    a[j] += static_cast<double>(y) * static_cast<double>(y);
  }
  return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

inline double sum_squares_fixed(const float* x, size_t n, float scale = 1.0f) {
  const size_t nblocks = (n + kSumSquaresBlock - 1) / kSumSquaresBlock;
  if (nblocks <= 1) return block_sum_squares(x, n, scale);
  std::vector<double> partial(nblocks);
  const long long nb = static_cast<long long>(nblocks);
#pragma omp parallel for schedule(static) if (nb >= 16)
  for (long long b = 0; b < nb; ++b) {
    const size_t lo = static_cast<size_t>(b) * kSumSquaresBlock;
    const size_t len = lo + kSumSquaresBlock <= n ? kSumSquaresBlock : n - lo;
    partial[size_t(b)] = block_sum_squares(x + lo, len, scale);
  }
  double total = 0.0;
  for (double s : partial) total += s;
  return total;
}

}  // namespace zt
