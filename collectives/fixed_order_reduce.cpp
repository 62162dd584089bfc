// Rank-order reduction kernels (see fixed_order_reduce.h). The per-element order of additions is
// fixed, so the result is bitwise the same whatever MPI algorithm moved the bytes.
#include "collectives/fixed_order_reduce.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "base/half_float.h"

namespace zt {
namespace {

// Works in blocks so the fp32 accumulator lives on the stack and stays in L1.
constexpr size_t kBlock = 2048;

void reduce_f32(const float* const* rows, size_t n, int w, int divisor, float* out) {
  float acc[kBlock];
  const float div = float(divisor);
  for (size_t b = 0; b < n; b += kBlock) {
    const size_t m = std::min(kBlock, n - b);
    std::memcpy(acc, rows[0] + b, m * sizeof(float));
    for (int r = 1; r < w; ++r) {
      const float* row = rows[r] + b;
      for (size_t i = 0; i < m; ++i) acc[i] += row[i];
    }
    if (divisor)
      for (size_t i = 0; i < m; ++i) acc[i] /= div;
    std::memcpy(out + b, acc, m * sizeof(float));
  }
}

template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float)>
void reduce_16(const uint16_t* const* rows, size_t n, int w, int divisor, uint16_t* out) {
  float acc[kBlock];
  const float div = float(divisor);
  for (size_t b = 0; b < n; b += kBlock) {
    const size_t m = std::min(kBlock, n - b);
    for (size_t i = 0; i < m; ++i) acc[i] = Widen(rows[0][b + i]);
    for (int r = 1; r < w; ++r) {
      const uint16_t* row = rows[r] + b;
      for (size_t i = 0; i < m; ++i) acc[i] += Widen(row[i]);
    }
    if (divisor)
      for (size_t i = 0; i < m; ++i) acc[i] /= div;
    for (size_t i = 0; i < m; ++i) out[b + i] = Narrow(acc[i]);
  }
}

void reduce_i64(const int64_t* const* rows, size_t n, int w, int64_t* out) {
  int64_t acc[kBlock];
  for (size_t b = 0; b < n; b += kBlock) {
    const size_t m = std::min(kBlock, n - b);
    std::memcpy(acc, rows[0] + b, m * sizeof(int64_t));
    for (int r = 1; r < w; ++r) {
      const int64_t* row = rows[r] + b;
      // unsigned arithmetic: wrap-around instead of undefined behaviour on overflow
      for (size_t i = 0; i < m; ++i) acc[i] = int64_t(uint64_t(acc[i]) + uint64_t(row[i]));
    }
    std::memcpy(out + b, acc, m * sizeof(int64_t));
  }
}

template <typename T>
const T* const* as(const void* const* rows) {
  return reinterpret_cast<const T* const*>(rows);
}

}  // namespace

void reduce_row_list(const void* const* rows, size_t n, int w, DType t, int divisor, void* out) {
  if (n == 0) return;
  switch (t) {
    case DType::F32:
      reduce_f32(as<float>(rows), n, w, divisor, static_cast<float*>(out));
      break;
    case DType::BF16:
      reduce_16<bf16_bits_to_f32, f32_to_bf16_bits>(as<uint16_t>(rows), n, w, divisor, static_cast<uint16_t*>(out));
      break;
    case DType::F16:
      reduce_16<f16_bits_to_f32, f32_to_f16_bits>(as<uint16_t>(rows), n, w, divisor, static_cast<uint16_t*>(out));
      break;
    case DType::I64:
      reduce_i64(as<int64_t>(rows), n, w, static_cast<int64_t*>(out));
      break;
    case DType::U8:
      throw std::invalid_argument("fixed-order reduce: uint8 holds packed bits, which are never summed");
  }
}

void reduce_rows(const void* rows, size_t n, int w, DType t, int divisor, void* out) {
  std::vector<const void*> list(size_t(std::max(w, 0)));
  const size_t row_bytes = n * dtype_size(t);
  for (int r = 0; r < w; ++r) list[size_t(r)] = static_cast<const char*>(rows) + size_t(r) * row_bytes;
  reduce_row_list(list.data(), n, w, t, divisor, out);
}

void reduce_rank_order(const void* rows, size_t n, int w, DType t, ReduceOp op, void* out) {
  reduce_rows(rows, n, w, t, op == ReduceOp::Avg ? w : 0, out);
}

}  // namespace zt
