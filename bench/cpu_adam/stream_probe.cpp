// StreamProbe: p += a*g, m += b*g, v += c*g in place (28 bytes per element, no write-allocate),
// compiled for the widest vector unit the CPU has (target clones) so it is a fair ceiling; the
// Prefetch kind copies the Adam paths' loop structure (alignment head, prefetch distance).
#include "bench/cpu_adam/stream_probe.h"

#include <omp.h>

#include <algorithm>

#include "offload/adam_elem.h"

namespace zt::bench {
namespace {

constexpr float kA = 1e-7f, kB = 2e-7f, kC = 3e-7f;

__attribute__((target_clones("avx512f", "avx2", "default"))) void probe_range(float* __restrict p,
                                                                                const float* __restrict g,
                                                                                float* __restrict m,
                                                                                float* __restrict v, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const float gi = g[i];
    p[i] += kA * gi;
    m[i] += kB * gi;
    v[i] += kC * gi;
  }
}

// One 64-byte line per stream per iteration (the inner loop becomes one or two vectors).
__attribute__((target_clones("avx512f", "avx2", "default"))) void probe_range_prefetch(
    float* __restrict p, const float* __restrict g, float* __restrict m, float* __restrict v, size_t n) {
  size_t i = std::min(n, offload::adam_head_elems(p));
  probe_range(p, g, m, v, i);
  for (; i + 16 + offload::kAdamPrefetchElems <= n; i += 16) {
    offload::adam_prefetch(p, g, m, v, i + offload::kAdamPrefetchElems);
    for (size_t j = i; j < i + 16; ++j) {
      const float gi = g[j];
      p[j] += kA * gi;
      m[j] += kB * gi;
      v[j] += kC * gi;
    }
  }
  probe_range(p + i, g + i, m + i, v + i, n - i);
}

}  // namespace

const char* probe_kind_name(ProbeKind kind) { return kind == ProbeKind::Prefetch ? "probe_pf" : "probe"; }

void stream_probe(float* p, const float* g, float* m, float* v, size_t n, int threads, ProbeKind kind) {
#pragma omp parallel num_threads(threads)
  {
    const size_t T = static_cast<size_t>(omp_get_num_threads()), t = static_cast<size_t>(omp_get_thread_num());
    const size_t lines = n / 16;
    const size_t b = lines * t / T * 16, e = t + 1 == T ? n : lines * (t + 1) / T * 16;
    if (e > b) {
      if (kind == ProbeKind::Prefetch) probe_range_prefetch(p + b, g + b, m + b, v + b, e - b);
      else probe_range(p + b, g + b, m + b, v + b, e - b);
    }
  }
}

}  // namespace zt::bench
