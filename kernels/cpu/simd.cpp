// The CPU backend's SIMD level: base/simd.h's rule (CPU features and ZT_SIMD), resolved once per
// process for the kernels, and overridable for tests that compare the variants.
#include "kernels/cpu/simd.h"

#include <atomic>

namespace zt::cpu {

namespace {

std::atomic<int>& current() {
  static std::atomic<int> level{int(resolve_simd_level())};
  return level;
}

}  // namespace

SimdLevel simd_level() { return SimdLevel(current().load(std::memory_order_relaxed)); }

void set_simd_level(SimdLevel level) {
  current().store(int(checked_simd_level(level, "set_simd_level")), std::memory_order_relaxed);
}

}  // namespace zt::cpu
