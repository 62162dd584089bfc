// Symmetric block quantization to int8 or int4 on the CPU: one fp32 scale per block of elements,
// q = round-half-to-even(x / scale) in +-qmax, and back (into fp32 or bf16, or added into an fp32
// sum). The element rules are in quant_math.h, the conventions in kernels/quant/README.md. Each
// body is compiled for AVX-512, AVX2 and baseline x86-64 and the CPU backend's SIMD level
// (kernels/cpu/simd.h: ZT_SIMD, set_simd_level) picks one; every level computes the same bits.
#pragma once

#include <cstddef>
#include <cstdint>

namespace zt::quant {

enum class QuantBits { Int8 = 8, Int4 = 4 };

// Largest level: 2^(bits-1) - 1 (127 for int8, 7 for int4).
constexpr int quant_max(QuantBits b) { return b == QuantBits::Int8 ? 127 : 7; }
const char* quant_bits_name(QuantBits b);  // "int8" | "int4"

// A span of n elements cut into blocks of `block` elements (the last one possibly shorter).
// block must be a multiple of 8 or cover the whole span (>= n), so that int4 blocks start on a
// byte; check() throws std::invalid_argument naming the value otherwise.
struct QuantLayout {
  QuantBits bits = QuantBits::Int8;
  size_t n = 0;
  size_t block = 8000;

  size_t blocks() const;   // ceil(n / block); validates
  size_t q_bytes() const;  // n (int8) or ceil(n / 2) (int4): two per byte, low nibble first
  void check() const;
};

// What quantize reports. A block holding an inf or NaN is refused: its scale is stored as NaN and
// its q as 0, so dequantizing gives NaN for the whole block (an overflow stays visible after the
// collective), and the status names the first such block and counts them.
struct QuantStatus {
  size_t bad_blocks = 0;
  size_t first_bad_block = 0;  // meaningful when bad_blocks > 0
  bool ok() const { return bad_blocks == 0; }
};

// x: layout.n values; q: layout.q_bytes() bytes; scales: layout.blocks() floats.
QuantStatus quantize(const float* x, const QuantLayout& layout, uint8_t* q, float* scales);
// bf16 values as uint16 bit patterns (the project's host bf16 convention).
QuantStatus quantize_bf16(const uint16_t* x, const QuantLayout& layout, uint8_t* q, float* scales);

// out[i] = q[i] * scale of its block, in fp32 (one rounding).
void dequantize(const uint8_t* q, const float* scales, const QuantLayout& layout, float* out);
// The same fp32 value rounded to bf16 (nearest even).
void dequantize_bf16(const uint8_t* q, const float* scales, const QuantLayout& layout, uint16_t* out);
// sum[i] += q[i] * scale (the fp32 product, then one fp32 addition): the reduction step of a
// quantized reduce-scatter.
void dequantize_add(const uint8_t* q, const float* scales, const QuantLayout& layout, float* sum);

// The SIMD level the quantizers run at now ("avx512" | "avx2" | "scalar").
const char* quant_simd_level_name();

}  // namespace zt::quant
