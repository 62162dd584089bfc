// CPU softmax cross-entropy: per-row loss and OVERWRITTEN dlogits = (softmax - onehot)·dloss/N_valid;
// rows with target < 0 are ignored (zero loss, zero gradient, not counted).
#include <cmath>

#include "kernels/cpu/cpu_ops.h"

namespace zt::cpu {

void crossentropy_forward_backward(float* losses, float* dlogits, const float* logits, const int32_t* targets,
                                   int N, int V, float dloss) {
  int64_t valid = 0;
  for (int n = 0; n < N; ++n) valid += targets[n] >= 0;
  const float g = valid > 0 ? dloss / float(valid) : 0.f;
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const float* x = logits + int64_t(n) * V;
    float* d = dlogits + int64_t(n) * V;
    const int target = targets[n];
    if (target < 0) {
      losses[n] = 0.f;
      for (int v = 0; v < V; ++v) d[v] = 0.f;
      continue;
    }
    float maxv = -INFINITY;
    for (int v = 0; v < V; ++v) maxv = x[v] > maxv ? x[v] : maxv;
    float sum = 0.f;
    for (int v = 0; v < V; ++v) {
      d[v] = std::exp(x[v] - maxv);
      sum += d[v];
    }
    const float inv = 1.0f / sum;
    losses[n] = std::log(sum) + maxv - x[target];
    for (int v = 0; v < V; ++v) d[v] = d[v] * inv * g;
    d[target] -= g;
  }
}

}  // namespace zt::cpu
