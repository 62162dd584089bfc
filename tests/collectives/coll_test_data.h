// Deterministic per-rank inputs for collective tests and the local reference results computed
// from every rank's input (rank-order fp32 fold, one rounding for 16-bit types).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "collectives/communicator.h"
#include "base/half_float.h"

namespace zt::test {

inline uint64_t mix(uint64_t x) {  // splitmix64 finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A value with a wide spread of magnitudes (so that the order of additions changes fp32 bits):
// a mantissa in [-1, 1) times 2^e, e in [-8, 7].
inline float input_f32(int rank, size_t i, uint64_t salt) {
  uint64_t h = mix(salt * 1000003ull + uint64_t(rank) * 0x100000001b3ull + i);
  float mant = float(int32_t(uint32_t(h))) * (1.0f / 2147483648.0f);
  uint32_t e = uint32_t((h >> 32) & 15u) + 127u - 8u;
  return mant * f32_from_bits(e << 23);
}

// Raw element bits of rank's input elements [first, first+n).
inline void fill_input(std::vector<char>& buf, DType t, size_t first, size_t n, int rank, uint64_t salt) {
  buf.assign(n * dtype_size(t), 0);
  char* p = buf.data();
  switch (t) {
    case DType::F32:
      for (size_t k = 0; k < n; ++k) {
        float v = input_f32(rank, first + k, salt);
        std::memcpy(p + 4 * k, &v, 4);
      }
      break;
    case DType::BF16:
      for (size_t k = 0; k < n; ++k) {
        uint16_t v = f32_to_bf16_bits(input_f32(rank, first + k, salt));
        std::memcpy(p + 2 * k, &v, 2);
      }
      break;
    case DType::F16:  // keep within fp16 range: |x| < 8
      for (size_t k = 0; k < n; ++k) {
        uint16_t v = f32_to_f16_bits(input_f32(rank, first + k, salt) / 256.0f);
        std::memcpy(p + 2 * k, &v, 2);
      }
      break;
    case DType::I64:  // full range: sums wrap around
      for (size_t k = 0; k < n; ++k) {
        int64_t v = int64_t(mix(salt + uint64_t(rank) * 7919u + (first + k) * 104729u));
        std::memcpy(p + 8 * k, &v, 8);
      }
      break;
    case DType::U8:  // packed bits: any byte
      for (size_t k = 0; k < n; ++k) p[k] = char(mix(salt + uint64_t(rank) * 7919u + (first + k) * 104729u) & 0xff);
      break;
  }
}

// Reference reduction over all ranks' inputs for elements [first, first+n), as raw bits: an
// element-by-element fold in rank order 0..W-1 (fp32 for the float types), AVG divides by W, and
// 16-bit results are rounded once at the end. With per_node = n (1 < n < W, n dividing W: the MPI
// communicator's two levels over W/n nodes of n) each node's ranks are folded in local order into a
// partial (rounded to 16 bits for the 16-bit types, as it crosses in its own type), and the partials
// in node order, then AVG divides by W and 16-bit results are rounded once more.
inline std::vector<char> reference_reduce(DType t, ReduceOp op, size_t first, size_t n, int world, uint64_t salt,
                                          int per_node = 0) {
  std::vector<char> out(n * dtype_size(t)), in;
  if (t == DType::I64) {
    std::vector<uint64_t> acc(n, 0);
    for (int r = 0; r < world; ++r) {
      fill_input(in, t, first, n, r, salt);
      for (size_t k = 0; k < n; ++k) {
        uint64_t v;
        std::memcpy(&v, in.data() + 8 * k, 8);
        acc[k] += v;
      }
    }
    if (n) std::memcpy(out.data(), acc.data(), 8 * n);
    return out;
  }
  const int group = per_node > 1 && per_node < world ? per_node : world;
  auto round16 = [&](float a) -> float {
    if (t == DType::F32) return a;
    return t == DType::BF16 ? bf16_bits_to_f32(f32_to_bf16_bits(a)) : f16_bits_to_f32(f32_to_f16_bits(a));
  };
  std::vector<float> acc(n, 0.0f), part(n, 0.0f);
  for (int r = 0; r < world; ++r) {
    fill_input(in, t, first, n, r, salt);
    for (size_t k = 0; k < n; ++k) {
      float v;
      if (t == DType::F32) {
        std::memcpy(&v, in.data() + 4 * k, 4);
      } else {
        uint16_t h;
        std::memcpy(&h, in.data() + 2 * k, 2);
        v = t == DType::BF16 ? bf16_bits_to_f32(h) : f16_bits_to_f32(h);
      }
      part[k] = r % group == 0 ? v : part[k] + v;
    }
    if (r % group != group - 1) continue;
    for (size_t k = 0; k < n; ++k) {
      const float p = group < world ? round16(part[k]) : part[k];
      acc[k] = r < group ? p : acc[k] + p;
    }
  }
  for (size_t k = 0; k < n; ++k) {
    float a = op == ReduceOp::Avg ? acc[k] / float(world) : acc[k];
    if (t == DType::F32) {
      std::memcpy(out.data() + 4 * k, &a, 4);
    } else {
      uint16_t h = t == DType::BF16 ? f32_to_bf16_bits(a) : f32_to_f16_bits(a);
      std::memcpy(out.data() + 2 * k, &h, 2);
    }
  }
  return out;
}

}  // namespace zt::test
