// DType: the one element-type enum of the project — buffers on a backend, collectives' payloads and
// the training precision (fp32 / bf16 / fp16) — with its size and name.
#pragma once

#include <cstddef>

namespace zt {

// F32, BF16 and F16 are the floating-point types a buffer, a collective or a training run uses; I64
// is for exact integer and bit-pattern exchanges (loss and norm partials travel as int64 bits); U8
// is for bytes moved unchanged (1-bit Adam's packed signs), never reduced.
enum class DType { F32, BF16, F16, I64, U8 };

constexpr size_t dtype_size(DType t) {
  return t == DType::F32 ? 4 : t == DType::I64 ? 8 : t == DType::U8 ? 1 : 2;
}

// "fp32", "bf16", "fp16", "int64", "uint8": the spelling configs and messages use.
constexpr const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "fp32";
    case DType::BF16: return "bf16";
    case DType::F16: return "fp16";
    case DType::I64: return "int64";
    case DType::U8: return "uint8";
  }
  return "?";
}

constexpr bool is_float16(DType t) { return t == DType::BF16 || t == DType::F16; }

}  // namespace zt
