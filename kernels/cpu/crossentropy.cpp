// CPU classifier: softmax cross-entropy and its gradient in one row pass over a padded vocabulary,
// in place when dlogits is logits; rows with target < 0 are ignored (zero loss, zero gradient).
#include <cmath>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/vec_math.h"

namespace zt::cpu {

namespace {

// One row: x (logits, V real columns of Vp) -> d (may be x). g = dloss / valid rows.
ZT_SIMD_INLINE void ce_row_body(float* loss, float* d, const float* x, int target, int V, int Vp, float g) {
  if (target < 0) {
    *loss = 0.f;
#pragma omp simd
    for (int v = 0; v < Vp; ++v) d[v] = 0.f;
    return;
  }
  const float xt = x[target];  // read before an in-place d overwrites it
  const float mx = vm::max_of(x, V, -INFINITY);
  const float sum = vm::exp_shifted_sum(x, V, mx, d);
  *loss = std::log(sum) + mx - xt;
  const float scale = g / sum;
#pragma omp simd
  for (int v = 0; v < V; ++v) d[v] = d[v] * scale;
  d[target] -= g;
#pragma omp simd
  for (int v = V; v < Vp; ++v) d[v] = 0.f;  // padded columns: masked out, gradient zero
}
ZT_SIMD_DISPATCH(ce_row, (float* loss, float* d, const float* x, int target, int V, int Vp, float g),
                 (loss, d, x, target, V, Vp, g))

}  // namespace

void crossentropy_forward_backward(float* losses, float* dlogits, const float* logits, const int32_t* targets,
                                   int N, int V, int Vp, float dloss) {
  int64_t valid = 0;
  for (int n = 0; n < N; ++n) valid += targets[n] >= 0;
  const float g = valid > 0 ? dloss / float(valid) : 0.f;
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n)
    ce_row(losses + n, dlogits + int64_t(n) * Vp, logits + int64_t(n) * Vp, targets[n], V, Vp, g);
}

}  // namespace zt::cpu
