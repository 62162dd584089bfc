// Per-element Adam update and the low-precision store (base/half_float.h's rounding) shared by every
// SIMD path's tail and the scalar path. Internal: everything has internal linkage so each ISA's file keeps its own copy.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <cmath>

#include "base/half_float.h"
#include "offload/cpu_adam.h"

namespace zt::offload {
namespace {

// How far ahead (in elements) the SIMD paths prefetch each of p, g, m and v: 1 KiB per stream.
// Measured on a 2-vCPU Cascade Lake guest, interleaved with the same-pattern probe: without
// software prefetch the AVX-512 and AVX2 loops ran at 0.89-0.95 of the probe (median), with it at
// 0.98-1.05; 0.5, 1, 1.5 and 2 KiB ahead measured alike (the hardware streamers alone leave the L1
// misses of four interleaved streams partly exposed behind the sqrt/divide).
constexpr size_t kAdamPrefetchElems = 256;

// Prefetches the 64-byte line at element i of each stream into L1 (a hint: never faults).
inline void adam_prefetch(const float* p, const float* g, const float* m, const float* v, size_t i) {
  _mm_prefetch(reinterpret_cast<const char*>(p + i), _MM_HINT_T0);
  _mm_prefetch(reinterpret_cast<const char*>(g + i), _MM_HINT_T0);
  _mm_prefetch(reinterpret_cast<const char*>(m + i), _MM_HINT_T0);
  _mm_prefetch(reinterpret_cast<const char*>(v + i), _MM_HINT_T0);
}

// Elements before p's next 64-byte boundary (0 when p is line-aligned): the SIMD paths do these
// with the scalar update so their vector stores cover whole aligned lines.
inline size_t adam_head_elems(const float* p) {
  const auto mis = reinterpret_cast<uintptr_t>(p) & 63u;
  return mis == 0 ? 0 : (64u - mis) / sizeof(float) % 16u;
}

inline void store_low(void* out, int out_kind, size_t i, float val) {
  if (out_kind == 1) static_cast<uint16_t*>(out)[i] = f32_to_bf16_bits(val);
  else if (out_kind == 2) static_cast<uint16_t*>(out)[i] = f32_to_f16_bits(val);
}

// One element: base/adam_math.h's formula (the files build with -ffp-contract=off).
inline void adam_elem(float& p, float g, float& m, float& v, const detail::AdamConsts& c) {
  adam_update_element(p, g, m, v, c);
}

inline void adam_range_elems(float* p, const float* g, float* m, float* v, size_t begin, size_t end,
                             const detail::AdamConsts& c, void* out, int out_kind) {
  for (size_t i = begin; i < end; ++i) {
    adam_elem(p[i], g[i], m[i], v[i], c);
    store_low(out, out_kind, i, p[i]);
  }
}

}  // namespace
}  // namespace zt::offload
