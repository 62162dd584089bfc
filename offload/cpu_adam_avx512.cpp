// AVX-512 CPU Adam path: 16 floats per vector with explicit mul/add (no FMA, so it matches the
// scalar path bit for bit) and the bf16/fp16 copy stored in the same pass; stores are aligned whole
// lines and every input stream is prefetched ahead (see adam_elem.h). Built with -mavx512f
// -mavx512bw -mavx512vl -ffp-contract=off; only called when the CPU reports AVX-512F/BW/VL.
#include <immintrin.h>

#include <algorithm>

#include "offload/adam_elem.h"
#include "offload/cpu_adam.h"

namespace zt::offload::detail {
namespace {

inline __m256i bf16_round16(__m512 x) {
  const __m512i xi = _mm512_castps_si512(x);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(xi, 16), _mm512_set1_epi32(1));
  const __m512i rounded =
      _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(xi, _mm512_set1_epi32(0x7FFF)), lsb), 16);
  const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(xi, 16), _mm512_set1_epi32(0x0040));
  const __m512i ax = _mm512_and_si512(xi, _mm512_set1_epi32(0x7FFFFFFF));
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(ax, _mm512_set1_epi32(0x7F800000));
  return _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(nan, rounded, quiet));
}

inline void store_low16(void* out, int out_kind, size_t i, __m512 x) {
  auto* dst = reinterpret_cast<__m256i*>(static_cast<uint16_t*>(out) + i);
  if (out_kind == 1) _mm256_storeu_si256(dst, bf16_round16(x));
  else if (out_kind == 2) _mm256_storeu_si256(dst, _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

// The per-step constants, broadcast once per call.
struct Vec {
  __m512 b1, omb1, b2, omb2, eps, gs, l2, decay, ss, isb2;
  explicit Vec(const AdamConsts& c)
      : b1(_mm512_set1_ps(c.beta1)), omb1(_mm512_set1_ps(c.one_minus_beta1)), b2(_mm512_set1_ps(c.beta2)),
        omb2(_mm512_set1_ps(c.one_minus_beta2)), eps(_mm512_set1_ps(c.eps)), gs(_mm512_set1_ps(c.grad_scale)),
        l2(_mm512_set1_ps(c.l2_decay)), decay(_mm512_set1_ps(c.decay)), ss(_mm512_set1_ps(c.step_size)),
        isb2(_mm512_set1_ps(c.inv_sqrt_bc2)) {}
};

// One vector of 16 elements (one 64-byte line per stream), in the order documented in cpu_adam.h.
template <bool kL2, int kOut>
__attribute__((always_inline)) inline void step16(float* p, const float* g, float* m, float* v, size_t i,
                                                  const Vec& k, void* out) {
  __m512 pp = _mm512_loadu_ps(p + i);
  __m512 gi = _mm512_mul_ps(_mm512_loadu_ps(g + i), k.gs);
  if constexpr (kL2) gi = _mm512_add_ps(gi, _mm512_mul_ps(k.l2, pp));
  const __m512 mm = _mm512_add_ps(_mm512_mul_ps(k.b1, _mm512_loadu_ps(m + i)), _mm512_mul_ps(k.omb1, gi));
  const __m512 vv =
      _mm512_add_ps(_mm512_mul_ps(k.b2, _mm512_loadu_ps(v + i)), _mm512_mul_ps(k.omb2, _mm512_mul_ps(gi, gi)));
  const __m512 den = _mm512_add_ps(_mm512_mul_ps(_mm512_sqrt_ps(vv), k.isb2), k.eps);
  pp = _mm512_mul_ps(pp, k.decay);
  pp = _mm512_sub_ps(pp, _mm512_mul_ps(k.ss, _mm512_div_ps(mm, den)));
  _mm512_storeu_ps(m + i, mm);
  _mm512_storeu_ps(v + i, vv);
  _mm512_storeu_ps(p + i, pp);
  if constexpr (kOut != 0) store_low16(out, kOut, i, pp);
}

template <bool kL2, int kOut>
void run(float* p, const float* g, float* m, float* v, size_t n, const AdamConsts& c, void* out) {
  const Vec k(c);
  // Scalar head (same math) up to p's next 64-byte boundary, so the vector stores are whole,
  // aligned lines (the shard's allocations and chunk edges are line-aligned, so usually none).
  size_t i = std::min(n, adam_head_elems(p));
  adam_range_elems(p, g, m, v, 0, i, c, out, kOut);
  // Main loop: prefetch each of the four streams kAdamPrefetchElems ahead (never past n).
  for (; i + 16 + kAdamPrefetchElems <= n; i += 16) {
    adam_prefetch(p, g, m, v, i + kAdamPrefetchElems);
    step16<kL2, kOut>(p, g, m, v, i, k, out);
  }
  for (; i + 16 <= n; i += 16) step16<kL2, kOut>(p, g, m, v, i, k, out);
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

void adam_range_avx512(float* p, const float* g, float* m, float* v, size_t n, const AdamConsts& c,
                       void* out, int out_kind) {
  if (c.l2) run_out<true>(p, g, m, v, n, c, out, out_kind);
  else run_out<false>(p, g, m, v, n, c, out, out_kind);
}

void convert_range_avx512(void* dst, int out_kind, const float* src, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) store_low16(dst, out_kind, i, _mm512_loadu_ps(src + i));
  for (; i < n; ++i) store_low(dst, out_kind, i, src[i]);
}

}  // namespace zt::offload::detail
