// for_each_simd_level: runs a test body at every SIMD level this CPU supports and at the scalar
// one (kernels/cpu/simd.h), printing the levels it cannot compare, and restores the level after.
#pragma once

#include <cstdio>

#include "kernels/cpu/simd.h"

namespace zt::test {

template <class F>
void for_each_simd_level(F f) {
  const cpu::SimdLevel before = cpu::simd_level();
  for (cpu::SimdLevel l : {cpu::SimdLevel::Scalar, cpu::SimdLevel::Avx2, cpu::SimdLevel::Avx512}) {
    if (!cpu::simd_level_supported(l)) {
      std::printf("SIMD level %s: not supported by this CPU, not compared\n", cpu::simd_level_name(l));
      continue;
    }
    cpu::set_simd_level(l);
    f(l);
  }
  cpu::set_simd_level(before);
}

}  // namespace zt::test
