// StreamProbe: p += a*g, m += b*g, v += c*g in place (28 bytes per element, no write-allocate),
// compiled for the widest vector unit the CPU has (target clones) so it is a fair ceiling; the
// Prefetch kind copies the Adam paths' loop structure (alignment head, prefetch distance, the order
// of loads and stores).
#include "bench/cpu_adam/stream_probe.h"

#include <immintrin.h>
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

// One 64-byte line per stream per iteration, in the Adam's order: load p, g, m, v (the empty asm
// pins all four loads before the stores, as the Adam's dependencies do), then store m, v, p.
__attribute__((target("avx512f"))) void probe_range_prefetch_avx512(float* p, const float* g, float* m, float* v,
                                                                     size_t n) {
  const __m512 a = _mm512_set1_ps(kA), b = _mm512_set1_ps(kB), c = _mm512_set1_ps(kC);
  size_t i = std::min(n, offload::adam_head_elems(p));
  probe_range(p, g, m, v, i);
  for (; i + 16 + offload::kAdamPrefetchElems <= n; i += 16) {
    offload::adam_prefetch(p, g, m, v, i + offload::kAdamPrefetchElems);
    __m512 pp = _mm512_loadu_ps(p + i), gg = _mm512_loadu_ps(g + i);
    __m512 mm = _mm512_loadu_ps(m + i), vv = _mm512_loadu_ps(v + i);
    __asm__ volatile("" : "+v"(pp), "+v"(gg), "+v"(mm), "+v"(vv));
    _mm512_storeu_ps(m + i, _mm512_add_ps(mm, _mm512_mul_ps(b, gg)));
    _mm512_storeu_ps(v + i, _mm512_add_ps(vv, _mm512_mul_ps(c, gg)));
    _mm512_storeu_ps(p + i, _mm512_add_ps(pp, _mm512_mul_ps(a, gg)));
  }
  probe_range(p + i, g + i, m + i, v + i, n - i);
}

__attribute__((target("avx2"))) void probe_range_prefetch_avx2(float* p, const float* g, float* m, float* v,
                                                                size_t n) {
  const __m256 a = _mm256_set1_ps(kA), b = _mm256_set1_ps(kB), c = _mm256_set1_ps(kC);
  size_t i = std::min(n, offload::adam_head_elems(p));
  probe_range(p, g, m, v, i);
  for (; i + 16 + offload::kAdamPrefetchElems <= n; i += 16) {
    offload::adam_prefetch(p, g, m, v, i + offload::kAdamPrefetchElems);
    for (size_t j = i; j < i + 16; j += 8) {
      __m256 pp = _mm256_loadu_ps(p + j), gg = _mm256_loadu_ps(g + j);
      __m256 mm = _mm256_loadu_ps(m + j), vv = _mm256_loadu_ps(v + j);
      __asm__ volatile("" : "+x"(pp), "+x"(gg), "+x"(mm), "+x"(vv));
      _mm256_storeu_ps(m + j, _mm256_add_ps(mm, _mm256_mul_ps(b, gg)));
      _mm256_storeu_ps(v + j, _mm256_add_ps(vv, _mm256_mul_ps(c, gg)));
      _mm256_storeu_ps(p + j, _mm256_add_ps(pp, _mm256_mul_ps(a, gg)));
    }
  }
  probe_range(p + i, g + i, m + i, v + i, n - i);
}

void probe_range_prefetch(float* p, const float* g, float* m, float* v, size_t n) {
  if (__builtin_cpu_supports("avx512f")) probe_range_prefetch_avx512(p, g, m, v, n);
  else if (__builtin_cpu_supports("avx2")) probe_range_prefetch_avx2(p, g, m, v, n);
  else probe_range(p, g, m, v, n);  // no SIMD path to mirror: the plain probe
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
