// The CPU block quantizers (block_quant.h): one SIMD body per block and direction, compiled at
// every level (simd.h's scheme, with the ISA as a template argument), blocks spread over OpenMP
// threads, large outputs written with non-temporal stores. Every per-element step is an
// exact or correctly rounded IEEE operation (quant_math.h) and the files build without FMA
// contraction, so the levels agree bit for bit.
#include "kernels/quant/block_quant.h"

#include <immintrin.h>

#include <cmath>
#include <cstring>
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

const char* quant_simd_level_name() { return simd_level_name(cpu::simd_level()); }

namespace {

constexpr size_t kChunk = 256;  // elements computed into an L1 buffer before they are stored
// Outputs at least this large are written with non-temporal stores: they do not fit in cache,
// and streaming them skips reading every destination line before it is overwritten.
constexpr size_t kStreamBytes = size_t(4) << 20;

enum class Isa { Scalar, Avx2, Avx512 };

// Non-temporal copies of the aligned middle of a chunk, one per vector width (each compiled for
// its ISA; SSE2's 16-byte one is baseline x86-64). d is aligned to the width; bytes a multiple.
ZT_TARGET_AVX512 inline void stream_lines_avx512(char* d, const char* s, size_t bytes) {
  for (size_t i = 0; i < bytes; i += 64)
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d + i), _mm512_loadu_si512(s + i));
}
ZT_TARGET_AVX2 inline void stream_lines_avx2(char* d, const char* s, size_t bytes) {
  for (size_t i = 0; i < bytes; i += 32)
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + i), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i)));
}
inline void stream_lines_sse2(char* d, const char* s, size_t bytes) {
  for (size_t i = 0; i < bytes; i += 16)
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
}

// dst[0, bytes) = src[0, bytes): plain, or with non-temporal stores of the variant's widest
// vector on the aligned middle.
template <Isa I>
ZT_SIMD_INLINE void store_chunk(void* dst, const void* src, size_t bytes, bool stream) {
  if (!stream) {
    std::memcpy(dst, src, bytes);
    return;
  }
  constexpr size_t W = I == Isa::Avx512 ? 64 : I == Isa::Avx2 ? 32 : 16;
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  size_t head = (W - (reinterpret_cast<uintptr_t>(d) & (W - 1))) & (W - 1);
  head = head < bytes ? head : bytes;
  std::memcpy(d, s, head);
  const size_t mid = (bytes - head) / W * W;
  if constexpr (I == Isa::Avx512) stream_lines_avx512(d + head, s + head, mid);
  else if constexpr (I == Isa::Avx2) stream_lines_avx2(d + head, s + head, mid);
  else stream_lines_sse2(d + head, s + head, mid);
  std::memcpy(d + head + mid, s + head + mid, bytes - head - mid);
}

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

// A block's absmax pass waits on memory and its levels pass on arithmetic (the block is in cache by
// then): while one chunk's levels are computed, the same span of the next block (the next in memory,
// which the static schedule gives this thread but at its last block) is prefetched, so the next
// absmax pass finds it in cache. A prefetch past the end of the input does not fault.
template <class In>
ZT_SIMD_INLINE void prefetch_next_block(const In* x, size_t len, size_t c, size_t cl) {
  // Integer arithmetic: the address may lie past the input, where pointer arithmetic is undefined.
  const uintptr_t p = reinterpret_cast<uintptr_t>(x) + (len + c) * sizeof(In);
  for (size_t b = 0; b < cl * sizeof(In); b += 64) _mm_prefetch(reinterpret_cast<const char*>(p + b), _MM_HINT_T0);
}

// q for len values by level(x), a chunk at a time: int8 bytes, or int4 levels packed in pairs.
template <Isa I, class In, class Level>
ZT_SIMD_INLINE void quant_levels(const In* x, size_t len, bool int4, uint8_t* q, Level level, bool stream) {
  if (!int4 && !stream) {
    for (size_t c = 0; c < len; c += kChunk) {
      const size_t cl = len - c < kChunk ? len - c : kChunk;
      prefetch_next_block(x, len, c, cl);
#pragma omp simd
      for (size_t i = 0; i < cl; ++i) q[c + i] = uint8_t(int8_t(level(load_in(x, c + i))));
    }
    return;
  }
  alignas(64) int8_t tmp[kChunk + 1];
  alignas(64) uint8_t packed[kChunk / 2];
  for (size_t c = 0; c < len; c += kChunk) {
    const size_t cl = len - c < kChunk ? len - c : kChunk;
    prefetch_next_block(x, len, c, cl);
#pragma omp simd
    for (size_t i = 0; i < cl; ++i) tmp[i] = int8_t(level(load_in(x, c + i)));
    if (!int4) {
      store_chunk<I>(q + c, tmp, cl, stream);
      continue;
    }
    tmp[cl] = 0;  // an odd length's last high nibble
    const size_t pb = (cl + 1) / 2;
#pragma omp simd
    for (size_t j = 0; j < pb; ++j) packed[j] = pack_nibbles(tmp[2 * j], tmp[2 * j + 1]);
    store_chunk<I>(q + c / 2, packed, pb, stream);
  }
}

// Quantizes one block of len values; returns false (NaN scale, q = 0) when it holds inf or NaN.
template <Isa I, class In>
ZT_SIMD_INLINE bool quant_block(const In* x, size_t len, int qmax, bool int4, uint8_t* q, float* scale,
                                bool stream) {
  uint32_t m = 0;  // an unsigned max reduction: the compiler vectorises it as it is
  for (size_t i = 0; i < len; ++i) {
    const uint32_t a = abs_bits(load_in(x, i));
    m = a > m ? a : m;
  }
  if (m >= kInfBits || m == 0) {
    std::memset(q, 0, int4 ? (len + 1) / 2 : len);
    *scale = m == 0 ? 0.0f : std::numeric_limits<float>::quiet_NaN();
    return m == 0;
  }
  const float s = block_scale(m, qmax);
  *scale = s;
  if (abs_bits(s) >= kFastScaleBits) quant_levels<I>(x, len, int4, q, FastLevel{1.0f / s, s, 0.5f * s, qmax}, stream);
  else quant_levels<I>(x, len, int4, q, ExactLevel{s, qmax}, stream);
  if (stream) _mm_sfence();  // this thread's streamed lines are ordered before what follows
  return true;
}

enum class OutKind { F32, BF16, AddF32 };

ZT_SIMD_INLINE void put(float* o, size_t i, float v, std::integral_constant<OutKind, OutKind::F32>) { o[i] = v; }
ZT_SIMD_INLINE void put(uint16_t* o, size_t i, float v, std::integral_constant<OutKind, OutKind::BF16>) {
  o[i] = f32_to_bf16_bits(v);
}
ZT_SIMD_INLINE void put(float* o, size_t i, float v, std::integral_constant<OutKind, OutKind::AddF32>) {
  o[i] = o[i] + v;
}

// dequantizes n values from q into out (levels from element 0 of q's byte 0).
template <OutKind K, class Out>
ZT_SIMD_INLINE void dequant_run(const uint8_t* q, size_t n, float s, bool int4, Out* out) {
  const std::integral_constant<OutKind, K> kind;
  if (!int4) {
#pragma omp simd
    for (size_t i = 0; i < n; ++i) put(out, i, float(int8_t(q[i])) * s, kind);
    return;
  }
  const size_t pairs = n / 2;
#pragma omp simd
  for (size_t j = 0; j < pairs; ++j) {
    const uint8_t b = q[j];
    put(out, 2 * j, float(low_nibble(b)) * s, kind);
    put(out, 2 * j + 1, float(high_nibble(b)) * s, kind);
  }
  if (n % 2) put(out, n - 1, float(low_nibble(q[pairs])) * s, kind);
}

template <Isa I, OutKind K, class Out>
ZT_SIMD_INLINE void dequant_block(const uint8_t* q, size_t len, float s, bool int4, Out* out, bool stream) {
  if constexpr (K != OutKind::AddF32) {
    if (stream) {
      alignas(64) Out tmp[kChunk];
      for (size_t c = 0; c < len; c += kChunk) {
        const size_t cl = len - c < kChunk ? len - c : kChunk;
        dequant_run<K>(q + (int4 ? c / 2 : c), cl, s, int4, tmp);
        store_chunk<I>(out + c, tmp, cl * sizeof(Out), true);
      }
      _mm_sfence();  // this thread's streamed lines are ordered before what follows
      return;
    }
  }
  dequant_run<K>(q, len, s, int4, out);
}

template <Isa I>
ZT_SIMD_INLINE void quant_f32_body(const float* x, size_t len, int qmax, bool int4, uint8_t* q, float* scale,
                                   bool stream, bool* ok) {
  *ok = quant_block<I>(x, len, qmax, int4, q, scale, stream);
}
template <Isa I>
ZT_SIMD_INLINE void quant_bf16_body(const uint16_t* x, size_t len, int qmax, bool int4, uint8_t* q, float* scale,
                                    bool stream, bool* ok) {
  *ok = quant_block<I>(x, len, qmax, int4, q, scale, stream);
}
template <Isa I>
ZT_SIMD_INLINE void deq_f32_body(const uint8_t* q, size_t len, float s, bool int4, float* out, bool stream) {
  dequant_block<I, OutKind::F32>(q, len, s, int4, out, stream);
}
template <Isa I>
ZT_SIMD_INLINE void deq_bf16_body(const uint8_t* q, size_t len, float s, bool int4, uint16_t* out, bool stream) {
  dequant_block<I, OutKind::BF16>(q, len, s, int4, out, stream);
}
template <Isa I>
ZT_SIMD_INLINE void deq_add_body(const uint8_t* q, size_t len, float s, bool int4, float* sum, bool stream) {
  dequant_block<I, OutKind::AddF32>(q, len, s, int4, sum, stream);
}

// simd.h's ZT_SIMD_DISPATCH, with the variant's ISA as a template argument of the body (the
// streaming stores are the one place the variants' code differs; the values they store do not).
#define ZT_QUANT_DISPATCH(NAME, PARAMS, ARGS) \
  ZT_SIMD_DISPATCH_BODIES(NAME, PARAMS, ARGS, NAME##_body<Isa::Avx512>, NAME##_body<Isa::Avx2>, NAME##_body<Isa::Scalar>)
ZT_QUANT_DISPATCH(quant_f32,
                  (const float* x, size_t len, int qmax, bool int4, uint8_t* q, float* scale, bool stream, bool* ok),
                  (x, len, qmax, int4, q, scale, stream, ok))
ZT_QUANT_DISPATCH(quant_bf16,
                  (const uint16_t* x, size_t len, int qmax, bool int4, uint8_t* q, float* scale, bool stream, bool* ok),
                  (x, len, qmax, int4, q, scale, stream, ok))
ZT_QUANT_DISPATCH(deq_f32, (const uint8_t* q, size_t len, float s, bool int4, float* out, bool stream),
                  (q, len, s, int4, out, stream))
ZT_QUANT_DISPATCH(deq_bf16, (const uint8_t* q, size_t len, float s, bool int4, uint16_t* out, bool stream),
                  (q, len, s, int4, out, stream))
ZT_QUANT_DISPATCH(deq_add, (const uint8_t* q, size_t len, float s, bool int4, float* sum, bool stream),
                  (q, len, s, int4, sum, stream))
#undef ZT_QUANT_DISPATCH

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
  const bool stream = l.q_bytes() >= kStreamBytes;
  size_t bad = 0, first = std::numeric_limits<size_t>::max();
#pragma omp parallel for schedule(static) reduction(+ : bad) reduction(min : first)
  for (int64_t b = 0; b < nb; ++b) {
    const BlockSpan sp = span_of(l, size_t(b));
    bool ok = true;
    block_fn(x + sp.begin, sp.len, qmax, int4, q + sp.q_off, scales + b, stream, &ok);
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
  const bool stream = l.n * sizeof(Out) >= kStreamBytes;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < nb; ++b) {
    const BlockSpan sp = span_of(l, size_t(b));
    block_fn(q + sp.q_off, sp.len, scales[b], int4, out + sp.begin, stream);
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
