// The CPU backend's SIMD level: resolved once from the CPU's features and ZT_SIMD (offload's
// resolve_simd_path, so the CPU Adam and the model kernels follow one rule), overridable for tests.
#include "kernels/cpu/simd.h"

#include <atomic>
#include <stdexcept>
#include <string>

#include "offload/cpu_adam.h"

namespace zt::cpu {

namespace {

offload::SimdPath to_path(SimdLevel l) {
  switch (l) {
    case SimdLevel::Avx512: return offload::SimdPath::Avx512;
    case SimdLevel::Avx2: return offload::SimdPath::Avx2;
    case SimdLevel::Scalar: break;
  }
  return offload::SimdPath::Scalar;
}

SimdLevel from_path(offload::SimdPath p) {
  if (p == offload::SimdPath::Avx512) return SimdLevel::Avx512;
  if (p == offload::SimdPath::Avx2) return SimdLevel::Avx2;
  return SimdLevel::Scalar;
}

std::atomic<int>& current() {
  static std::atomic<int> level{int(from_path(offload::resolve_simd_path()))};
  return level;
}

}  // namespace

SimdLevel simd_level() { return SimdLevel(current().load(std::memory_order_relaxed)); }

const char* simd_level_name(SimdLevel level) { return offload::simd_path_name(to_path(level)); }

bool simd_level_supported(SimdLevel level) { return offload::simd_path_supported(to_path(level)); }

void set_simd_level(SimdLevel level) {
  if (!simd_level_supported(level))
    throw std::runtime_error(std::string("this CPU does not support the ") + simd_level_name(level) +
                             " kernels");
  current().store(int(level), std::memory_order_relaxed);
}

}  // namespace zt::cpu
