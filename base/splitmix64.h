// splitmix64_next: the next value of a splitmix64 stream (Steele, Lea and Flood's SplitMix, the
// 64-bit variant): a fast, well-mixed generator for reproducible shuffles and synthetic data.
#pragma once

#include <cstdint>

namespace zt {

inline uint64_t splitmix64_next(uint64_t& state) {
  uint64_t x = (state += 0x9E3779B97F4A7C15ull);
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace zt
