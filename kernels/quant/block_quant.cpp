// The CPU block quantizers (block_quant.h): one SIMD body per block and direction, compiled at
// every level by ZT_SIMD_DISPATCH, blocks spread over OpenMP threads. Every per-element step is an
// exact or correctly rounded IEEE operation (quant_math.h) and the files build without FMA
// contraction, so the levels agree bit for bit.
#include "kernels/quant/block_quant.h"

#include <cmath>
#include <type_traits>
#include <limits>
#include <stdexcept>
#include <string>

#include "kernels/cpu/simd.h"
#include "kernels/quant/quant_math.h"

namespace zt::quant {

const char* quant_bits_name(QuantBits b) { return b == QuantBits::Int8 ? "int8" : "int4"; }

void QuantLayout::check() const {
  if (block == 0 || (block % 8 != 0 && block < n))
    throw std::invalid_argument("quantizer layout: block size " + std::to_string(block) + " for " +
                                std::to_string(n) + " elements: it must be a multiple of 8 or cover the span");
}
size_t QuantLayout::blocks() const {
  check();
  return (n + block - 1) / block;
}
size_t QuantLayout::q_bytes() const { return bits == QuantBits::Int8 ? n : (n + 1) / 2; }

const char* quant_simd_level_name() { return cpu::simd_level_name(cpu::simd_level()); }

namespace {

constexpr size_t kQuantChunk = 256;  // int4: elements quantized into a stack buffer, then packed

ZT_SIMD_INLINE float load_in(const float* x, size_t i) { return x[i]; }
ZT_SIMD_INLINE float load_in(const uint16_t* x, size_t i) { return bf16_bits_to_f32(x[i]); }

// The two ways to the same q (quant_math.h): the fast one for scales >= 2^-125, else exact division.
struct FastLevel {
  float inv, s, half;
  int qmax;
  ZT_SIMD_INLINE int operator()(float v) const { return quantize_value_fast(v, inv, s, half, qmax); }
};
struct ExactLevel {
  float s;
  int qmax;
  ZT_SIMD_INLINE int operator()(float v) const { return quantize_value(v, s, qmax); }
};

// q for len values by level(x): int8 bytes, or int4 levels through a stack chunk, then packed.
template <class In, class Level>
ZT_SIMD_INLINE void quant_levels(const In* x, size_t len, bool int4, uint8_t* q, Level level) {
  if (!int4) {
#pragma omp simd
    for (size_t i = 0; i < len; ++i) q[i] = uint8_t(int8_t(level(load_in(x, i))));
    return;
  }
  int8_t tmp[kQuantChunk];
  for (size_t c = 0; c < len; c += kQuantChunk) {
    const size_t cl = len - c < kQuantChunk ? len - c : kQuantChunk;
#pragma omp simd
    for (size_t i = 0; i < cl; ++i) tmp[i] = int8_t(level(load_in(x, c + i)));
    if (cl % 2) tmp[cl] = 0;
    uint8_t* qc = q + c / 2;
#pragma omp simd
    for (size_t j = 0; j < (cl + 1) / 2; ++j) qc[j] = pack_nibbles(tmp[2 * j], tmp[2 * j + 1]);
  }
}

// Quantizes one block of len values; returns false (NaN scale, q = 0) when it holds inf or NaN.
template <class In>
ZT_SIMD_INLINE bool quant_block(const In* x, size_t len, int qmax, bool int4, uint8_t* q, float* scale) {
  uint32_t m = 0;
#pragma omp simd reduction(max : m)
  for (size_t i = 0; i < len; ++i) {
    const uint32_t a = abs_bits(load_in(x, i));
    m = a > m ? a : m;
  }
  const size_t qb = int4 ? (len + 1) / 2 : len;
  if (m >= kInfBits || m == 0) {
    for (size_t i = 0; i < qb; ++i) q[i] = 0;
    *scale = m == 0 ? 0.0f : std::numeric_limits<float>::quiet_NaN();
    return m == 0;
  }
  const float s = block_scale(m, qmax);
  *scale = s;
  if (abs_bits(s) >= kFastScaleBits) {
    const float inv = 1.0f / s, half = 0.5f * s;
    quant_levels(x, len, int4, q, FastLevel{inv, s, half, qmax});
  } else {
    quant_levels(x, len, int4, q, ExactLevel{s, qmax});
  }
  return true;
}

enum class OutKind { F32, BF16, AddF32 };

ZT_SIMD_INLINE void store_out(float* o, size_t i, float v, std::integral_constant<OutKind, OutKind::F32>) { o[i] = v; }
ZT_SIMD_INLINE void store_out(uint16_t* o, size_t i, float v, std::integral_constant<OutKind, OutKind::BF16>) {
  o[i] = f32_to_bf16_bits(v);
}
ZT_SIMD_INLINE void store_out(float* o, size_t i, float v, std::integral_constant<OutKind, OutKind::AddF32>) {
  o[i] = o[i] + v;
}

template <OutKind K, class Out>
ZT_SIMD_INLINE void dequant_block(const uint8_t* q, size_t len, float s, bool int4, Out* out) {
  const std::integral_constant<OutKind, K> kind;
  if (!int4) {
#pragma omp simd
    for (size_t i = 0; i < len; ++i) store_out(out, i, float(int8_t(q[i])) * s, kind);
    return;
  }
  const size_t pairs = len / 2;
#pragma omp simd
  for (size_t j = 0; j < pairs; ++j) {
    const uint8_t b = q[j];
    store_out(out, 2 * j, float(low_nibble(b)) * s, kind);
    store_out(out, 2 * j + 1, float(high_nibble(b)) * s, kind);
  }
  if (len % 2) store_out(out, len - 1, float(low_nibble(q[pairs])) * s, kind);
}

ZT_SIMD_INLINE bool quant_f32_body(const float* x, size_t len, int qmax, bool int4, uint8_t* q, float* scale,
                                   bool* ok) {
  return *ok = quant_block(x, len, qmax, int4, q, scale);
}
ZT_SIMD_INLINE bool quant_bf16_body(const uint16_t* x, size_t len, int qmax, bool int4, uint8_t* q, float* scale,
                                    bool* ok) {
  return *ok = quant_block(x, len, qmax, int4, q, scale);
}
ZT_SIMD_INLINE void deq_f32_body(const uint8_t* q, size_t len, float s, bool int4, float* out) {
  dequant_block<OutKind::F32>(q, len, s, int4, out);
}
ZT_SIMD_INLINE void deq_bf16_body(const uint8_t* q, size_t len, float s, bool int4, uint16_t* out) {
  dequant_block<OutKind::BF16>(q, len, s, int4, out);
}
ZT_SIMD_INLINE void deq_add_body(const uint8_t* q, size_t len, float s, bool int4, float* sum) {
  dequant_block<OutKind::AddF32>(q, len, s, int4, sum);
}
ZT_SIMD_DISPATCH(quant_f32, (const float* x, size_t len, int qmax, bool int4, uint8_t* q, float* scale, bool* ok),
                 (x, len, qmax, int4, q, scale, ok))
ZT_SIMD_DISPATCH(quant_bf16,
                 (const uint16_t* x, size_t len, int qmax, bool int4, uint8_t* q, float* scale, bool* ok),
                 (x, len, qmax, int4, q, scale, ok))
ZT_SIMD_DISPATCH(deq_f32, (const uint8_t* q, size_t len, float s, bool int4, float* out), (q, len, s, int4, out))
ZT_SIMD_DISPATCH(deq_bf16, (const uint8_t* q, size_t len, float s, bool int4, uint16_t* out), (q, len, s, int4, out))
ZT_SIMD_DISPATCH(deq_add, (const uint8_t* q, size_t len, float s, bool int4, float* sum), (q, len, s, int4, sum))

// Element offset of block b, its length and its first q byte.
struct BlockSpan {
  size_t begin, len, q_off;
};
BlockSpan span_of(const QuantLayout& l, size_t b) {
  const size_t begin = b * l.block;
  const size_t len = l.n - begin < l.block ? l.n - begin : l.block;
  return {begin, len, l.bits == QuantBits::Int8 ? begin : begin / 2};
}

template <class In, class F>
QuantStatus quantize_all(const In* x, const QuantLayout& l, uint8_t* q, float* scales, F block_fn) {
  const int64_t nb = int64_t(l.blocks());
  const int qmax = quant_max(l.bits);
  const bool int4 = l.bits == QuantBits::Int4;
  size_t bad = 0, first = std::numeric_limits<size_t>::max();
#pragma omp parallel for schedule(static) reduction(+ : bad) reduction(min : first)
  for (int64_t b = 0; b < nb; ++b) {
    const BlockSpan sp = span_of(l, size_t(b));
    bool ok = true;
    block_fn(x + sp.begin, sp.len, qmax, int4, q + sp.q_off, scales + b, &ok);
    if (!ok) {
      ++bad;
      first = size_t(b) < first ? size_t(b) : first;
    }
  }
  QuantStatus st;
  st.bad_blocks = bad;
  st.first_bad_block = bad ? first : 0;
  return st;
}

template <class Out, class F>
void dequantize_all(const uint8_t* q, const float* scales, const QuantLayout& l, Out* out, F block_fn) {
  const int64_t nb = int64_t(l.blocks());
  const bool int4 = l.bits == QuantBits::Int4;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < nb; ++b) {
    const BlockSpan sp = span_of(l, size_t(b));
    block_fn(q + sp.q_off, sp.len, scales[b], int4, out + sp.begin);
  }
}

}  // namespace

QuantStatus quantize(const float* x, const QuantLayout& layout, uint8_t* q, float* scales) {
  return quantize_all(x, layout, q, scales, quant_f32);
}
QuantStatus quantize_bf16(const uint16_t* x, const QuantLayout& layout, uint8_t* q, float* scales) {
  return quantize_all(x, layout, q, scales, quant_bf16);
}
void dequantize(const uint8_t* q, const float* scales, const QuantLayout& layout, float* out) {
  dequantize_all(q, scales, layout, out, deq_f32);
}
void dequantize_bf16(const uint8_t* q, const float* scales, const QuantLayout& layout, uint16_t* out) {
  dequantize_all(q, scales, layout, out, deq_bf16);
}
void dequantize_add(const uint8_t* q, const float* scales, const QuantLayout& layout, float* sum) {
  dequantize_all(q, scales, layout, sum, deq_add);
}

}  // namespace zt::quant
