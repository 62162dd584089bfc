// CPU rotary position embedding (rotate-half, transformers' Llama convention), in place on the
// first `heads` heads of each row, and its transpose (rotation by −θ) for the gradient: SIMD
// bodies (simd.h) over fixed row blocks; elementwise, so bitwise the same in every SIMD variant.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/simd.h"

namespace zt::cpu {

namespace {

constexpr int kRopeRowBlock = 32;  // (b, t) rows per task

// Rows r0..r1 of B·T (position t = r mod T): each of the first `heads` heads rotated by θ (forward)
// or by −θ (inverse: the gradient's transform), pairs (i, i + hd/2).
ZT_SIMD_INLINE void rope_rows_body(float* x, const float* cos, const float* sin, int r0, int r1, int T, int heads,
                                   int hd, int64_t row_stride, bool inverse) {
  const int half = hd / 2;
  for (int r = r0; r < r1; ++r) {
    const int t = r % T;
    const float* c = cos + int64_t(t) * half;
    const float* s = sin + int64_t(t) * half;
    float* row = x + int64_t(r) * row_stride;
    for (int h = 0; h < heads; ++h) {
      float* a = row + int64_t(h) * hd;
      float* b = a + half;
      if (!inverse) {
#pragma omp simd
        for (int i = 0; i < half; ++i) {
          const float x1 = a[i], x2 = b[i];
          a[i] = x1 * c[i] - x2 * s[i];
          b[i] = x2 * c[i] + x1 * s[i];
        }
      } else {
#pragma omp simd
        for (int i = 0; i < half; ++i) {
          const float d1 = a[i], d2 = b[i];
          a[i] = d1 * c[i] + d2 * s[i];
          b[i] = d2 * c[i] - d1 * s[i];
        }
      }
    }
  }
}

ZT_SIMD_DISPATCH(rope_rows,
                 (float* x, const float* cos, const float* sin, int r0, int r1, int T, int heads, int hd,
                  int64_t row_stride, bool inverse),
                 (x, cos, sin, r0, r1, T, heads, hd, row_stride, inverse))

void rope(float* x, const float* cos, const float* sin, int B, int T, int heads, int hd, int row_stride,
          bool inverse) {
  if (hd < 2 || hd % 2 != 0 || heads < 0 || int64_t(heads) * hd > row_stride)
    throw std::invalid_argument("rope: head size " + std::to_string(hd) + " must be even and " +
                                std::to_string(heads) + " heads must fit the row of " + std::to_string(row_stride));
  const int rows = B * T;
  const int blocks = (rows + kRopeRowBlock - 1) / kRopeRowBlock;
#pragma omp parallel for schedule(static)
  for (int k = 0; k < blocks; ++k)
    rope_rows(x, cos, sin, k * kRopeRowBlock, std::min(rows, (k + 1) * kRopeRowBlock), T, heads, hd, row_stride, inverse);
}

}  // namespace

void rope_forward(float* x, const float* cos, const float* sin, int B, int T, int heads, int hd, int row_stride) {
  rope(x, cos, sin, B, T, heads, hd, row_stride, false);
}

void rope_backward(float* dx, const float* cos, const float* sin, int B, int T, int heads, int hd, int row_stride) {
  rope(dx, cos, sin, B, T, heads, hd, row_stride, true);
}

}  // namespace zt::cpu
