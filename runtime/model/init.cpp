// Counter-based N(0, σ) initialisation: a splitmix64 hash of (seed, unit, tensor, element) gives two
// uniforms, Box–Muller gives the normal; no generator state, so slices agree with the whole.
#include "runtime/model/init.h"

#include <algorithm>
#include <cmath>

namespace zt {

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

double to_unit_open(uint64_t h) { return (double(h >> 11) + 0.5) * (1.0 / 9007199254740992.0); }

float value_at(const TensorView& t, uint64_t seed, int unit, int tensor_index, int64_t i) {
  if (t.init_std == 0.f) return t.init_value;
  const uint64_t key = splitmix64(splitmix64(splitmix64(seed) ^ uint64_t(unit)) ^ uint64_t(tensor_index));
  const uint64_t h1 = splitmix64(key ^ (uint64_t(i) * 2));
  const uint64_t h2 = splitmix64(key ^ (uint64_t(i) * 2 + 1));
  const double r = std::sqrt(-2.0 * std::log(to_unit_open(h1)));
  const double z = r * std::cos(6.283185307179586 * to_unit_open(h2));
  return float(z * double(t.init_std));
}

}  // namespace

float init_param_value(const UnitLayout& layout, uint64_t seed, int64_t element) {
  for (size_t k = 0; k < layout.tensors.size(); ++k) {
    const auto& t = layout.tensors[k];
    if (element >= t.offset && element < t.offset + t.numel)
      return value_at(t, seed, layout.index, int(k), element - t.offset);
  }
  return 0.f;
}

void init_unit_params(const UnitLayout& layout, uint64_t seed, int64_t begin, int64_t end, float* out) {
  for (int64_t e = begin; e < end; ++e) out[e - begin] = 0.f;
  for (size_t k = 0; k < layout.tensors.size(); ++k) {
    const auto& t = layout.tensors[k];
    const int64_t lo = std::max(begin, t.offset), hi = std::min(end, t.offset + t.numel);
#pragma omp parallel for schedule(static)
    for (int64_t e = lo; e < hi; ++e) out[e - begin] = value_at(t, seed, layout.index, int(k), e - t.offset);
  }
}

}  // namespace zt
