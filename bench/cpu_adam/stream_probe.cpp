// StreamProbe: p += a*g, m += b*g, v += c*g in place (28 bytes per element, no write-allocate),
// compiled for the widest vector unit the CPU has (target clones) so it is a fair ceiling.
#include "bench/cpu_adam/stream_probe.h"

#include <omp.h>

#include <algorithm>

namespace zt::bench {
namespace {

__attribute__((target_clones("avx512f", "avx2", "default"))) void probe_range(float* __restrict p,
                                                                                const float* __restrict g,
                                                                                float* __restrict m,
                                                                                float* __restrict v, size_t n) {
  const float a = 1e-7f, b = 2e-7f, c = 3e-7f;
  for (size_t i = 0; i < n; ++i) {
    const float gi = g[i];
    p[i] += a * gi;
    m[i] += b * gi;
    v[i] += c * gi;
  }
}

}  // namespace

void stream_probe(float* p, const float* g, float* m, float* v, size_t n, int threads) {
#pragma omp parallel num_threads(threads)
  {
    const size_t T = static_cast<size_t>(omp_get_num_threads()), t = static_cast<size_t>(omp_get_thread_num());
    const size_t lines = n / 16;
    const size_t b = lines * t / T * 16, e = t + 1 == T ? n : lines * (t + 1) / T * 16;
    if (e > b) probe_range(p + b, g + b, m + b, v + b, e - b);
  }
}

}  // namespace zt::bench
