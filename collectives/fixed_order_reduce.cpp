// Rank-order reduction kernels (see fixed_order_reduce.h). The per-element order of additions is
// fixed, so the result is bitwise the same whatever MPI algorithm moved the bytes.
#include "collectives/fixed_order_reduce.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "base/half_float.h"

namespace zt {
namespace {

// Works in blocks so the fp32 accumulator lives on the stack and stays in L1.
constexpr size_t kBlock = 2048;

void reduce_f32(const float* rows, size_t n, int w, int divisor, float* out) {
  float acc[kBlock];
  const float div = float(divisor);
  for (size_t b = 0; b < n; b += kBlock) {
    const size_t m = std::min(kBlock, n - b);
    std::memcpy(acc, rows + b, m * sizeof(float));
    for (int r = 1; r < w; ++r) {
      const float* row = rows + size_t(r) * n + b;
      for (size_t i = 0; i < m; ++i) acc[i] += row[i];
    }
    if (divisor)
      for (size_t i = 0; i < m; ++i) acc[i] /= div;
    std::memcpy(out + b, acc, m * sizeof(float));
  }
}

template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float)>
void reduce_16(const uint16_t* rows, size_t n, int w, int divisor, uint16_t* out) {
  float acc[kBlock];
  const float div = float(divisor);
  for (size_t b = 0; b < n; b += kBlock) {
    const size_t m = std::min(kBlock, n - b);
    for (size_t i = 0; i < m; ++i) acc[i] = Widen(rows[b + i]);
    for (int r = 1; r < w; ++r) {
      const uint16_t* row = rows + size_t(r) * n + b;
      for (size_t i = 0; i < m; ++i) acc[i] += Widen(row[i]);
    }
    if (divisor)
      for (size_t i = 0; i < m; ++i) acc[i] /= div;
    for (size_t i = 0; i < m; ++i) out[b + i] = Narrow(acc[i]);
  }
}

void reduce_i64(const int64_t* rows, size_t n, int w, int64_t* out) {
  int64_t acc[kBlock];
  for (size_t b = 0; b < n; b += kBlock) {
    const size_t m = std::min(kBlock, n - b);
    std::memcpy(acc, rows + b, m * sizeof(int64_t));
    for (int r = 1; r < w; ++r) {
      const int64_t* row = rows + size_t(r) * n + b;
      // unsigned arithmetic: wrap-around instead of undefined behaviour on overflow
      for (size_t i = 0; i < m; ++i) acc[i] = int64_t(uint64_t(acc[i]) + uint64_t(row[i]));
    }
    std::memcpy(out + b, acc, m * sizeof(int64_t));
  }
}

}  // namespace

void reduce_rows(const void* rows, size_t n, int w, DType t, int divisor, void* out) {
  if (n == 0) return;
  switch (t) {
    case DType::F32:
      reduce_f32(static_cast<const float*>(rows), n, w, divisor, static_cast<float*>(out));
      break;
    case DType::BF16:
      reduce_16<bf16_bits_to_f32, f32_to_bf16_bits>(static_cast<const uint16_t*>(rows), n, w, divisor, static_cast<uint16_t*>(out));
      break;
    case DType::F16:
      reduce_16<f16_bits_to_f32, f32_to_f16_bits>(static_cast<const uint16_t*>(rows), n, w, divisor, static_cast<uint16_t*>(out));
      break;
    case DType::I64:
      reduce_i64(static_cast<const int64_t*>(rows), n, w, static_cast<int64_t*>(out));
      break;
    case DType::U8:
      throw std::invalid_argument("fixed-order reduce: uint8 holds packed bits, which are never summed");
  }
}

void reduce_rank_order(const void* rows, size_t n, int w, DType t, ReduceOp op, void* out) {
  reduce_rows(rows, n, w, t, op == ReduceOp::Avg ? w : 0, out);
}

}  // namespace zt
