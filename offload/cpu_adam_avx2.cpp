// AVX2 CPU Adam path: 8 floats per vector with explicit mul/add (no FMA, so it matches the scalar
// path bit for bit) and the bf16/fp16 copy stored in the same pass; stores are aligned whole lines
// and every input stream is prefetched ahead (see adam_elem.h). Built with -mavx2 -mfma -mf16c
// -ffp-contract=off; only called when the CPU reports AVX2 and FMA.
#include <immintrin.h>

#include <algorithm>

#include "offload/adam_elem.h"
#include "offload/cpu_adam.h"

namespace zt::offload::detail {
namespace {

inline __m128i pack_u32_to_u16(__m256i x) {  // every lane holds a value <= 0xFFFF
  const __m256i packed = _mm256_packus_epi32(x, x);  // per 128-bit lane: a0..a3 a0..a3 | a4..a7 a4..a7
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0x08));
}

inline __m128i bf16_round8(__m256 x) {
  const __m256i xi = _mm256_castps_si256(x);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(xi, 16), _mm256_set1_epi32(1));
  const __m256i rounded =
      _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(xi, _mm256_set1_epi32(0x7FFF)), lsb), 16);
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(xi, 16), _mm256_set1_epi32(0x0040));
  const __m256i ax = _mm256_and_si256(xi, _mm256_set1_epi32(0x7FFFFFFF));
  const __m256i nan = _mm256_cmpgt_epi32(ax, _mm256_set1_epi32(0x7F800000));  // ax < 2^31: signed ok
  return pack_u32_to_u16(_mm256_blendv_epi8(rounded, quiet, nan));
}

inline void store_low8(void* out, int out_kind, size_t i, __m256 x) {
  auto* dst = reinterpret_cast<__m128i*>(static_cast<uint16_t*>(out) + i);
  if (out_kind == 1) _mm_storeu_si128(dst, bf16_round8(x));
  else if (out_kind == 2) _mm_storeu_si128(dst, _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

// The per-step constants, broadcast once per call.
struct Vec {
  __m256 b1, omb1, b2, omb2, eps, gs, l2, decay, ss, isb2;
  explicit Vec(const AdamConsts& c)
      : b1(_mm256_set1_ps(c.beta1)), omb1(_mm256_set1_ps(c.one_minus_beta1)), b2(_mm256_set1_ps(c.beta2)),
        omb2(_mm256_set1_ps(c.one_minus_beta2)), eps(_mm256_set1_ps(c.eps)), gs(_mm256_set1_ps(c.grad_scale)),
        l2(_mm256_set1_ps(c.l2_decay)), decay(_mm256_set1_ps(c.decay)), ss(_mm256_set1_ps(c.step_size)),
        isb2(_mm256_set1_ps(c.inv_sqrt_bc2)) {}
};

// One vector of 8 elements, in the order documented in cpu_adam.h.
template <bool kL2, int kOut>
__attribute__((always_inline)) inline void step8(float* p, const float* g, float* m, float* v, size_t i,
                                                 const Vec& k, void* out) {
  __m256 pp = _mm256_loadu_ps(p + i);
  __m256 gi = _mm256_mul_ps(_mm256_loadu_ps(g + i), k.gs);
  if constexpr (kL2) gi = _mm256_add_ps(gi, _mm256_mul_ps(k.l2, pp));
  const __m256 mm = _mm256_add_ps(_mm256_mul_ps(k.b1, _mm256_loadu_ps(m + i)), _mm256_mul_ps(k.omb1, gi));
  const __m256 vv =
      _mm256_add_ps(_mm256_mul_ps(k.b2, _mm256_loadu_ps(v + i)), _mm256_mul_ps(k.omb2, _mm256_mul_ps(gi, gi)));
  const __m256 den = _mm256_add_ps(_mm256_mul_ps(_mm256_sqrt_ps(vv), k.isb2), k.eps);
  pp = _mm256_mul_ps(pp, k.decay);
  pp = _mm256_sub_ps(pp, _mm256_mul_ps(k.ss, _mm256_div_ps(mm, den)));
  _mm256_storeu_ps(m + i, mm);
  _mm256_storeu_ps(v + i, vv);
  _mm256_storeu_ps(p + i, pp);
  if constexpr (kOut != 0) store_low8(out, kOut, i, pp);
}

template <bool kL2, int kOut>
void run(float* p, const float* g, float* m, float* v, size_t n, const AdamConsts& c, void* out) {
  const Vec k(c);
  // Scalar head (same math) up to p's next 64-byte boundary, then two vectors per iteration so
  // each iteration stores whole aligned lines and prefetches one line per stream ahead (never past n).
  size_t i = std::min(n, adam_head_elems(p));
  adam_range_elems(p, g, m, v, 0, i, c, out, kOut);
  for (; i + 16 + kAdamPrefetchElems <= n; i += 16) {
    adam_prefetch(p, g, m, v, i + kAdamPrefetchElems);
    step8<kL2, kOut>(p, g, m, v, i, k, out);
    step8<kL2, kOut>(p, g, m, v, i + 8, k, out);
  }
  for (; i + 8 <= n; i += 8) step8<kL2, kOut>(p, g, m, v, i, k, out);
  adam_range_elems(p, g, m, v, i, n, c, out, kOut);
}

template <bool kL2>
void run_out(float* p, const float* g, float* m, float* v, size_t n, const AdamConsts& c, void* out,
             int out_kind) {
  if (out_kind == 1) run<kL2, 1>(p, g, m, v, n, c, out);
  else if (out_kind == 2) run<kL2, 2>(p, g, m, v, n, c, out);
  else run<kL2, 0>(p, g, m, v, n, c, out);
}

}  // namespace

void adam_range_avx2(float* p, const float* g, float* m, float* v, size_t n, const AdamConsts& c,
                     void* out, int out_kind) {
  if (c.l2) run_out<true>(p, g, m, v, n, c, out, out_kind);
  else run_out<false>(p, g, m, v, n, c, out, out_kind);
}

void convert_range_avx2(void* dst, int out_kind, const float* src, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) store_low8(dst, out_kind, i, _mm256_loadu_ps(src + i));
  for (; i < n; ++i) store_low(dst, out_kind, i, src[i]);
}

}  // namespace zt::offload::detail
