// Random test inputs for the op tests of tests/model: n values from N(0, s²), reproducible by seed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace zt::test {

inline std::vector<float> randn(size_t n, uint32_t seed, float s = 1.f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, s);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

}  // namespace zt::test
