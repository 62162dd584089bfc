// for_each_simd_level: runs a test body at every SIMD level this CPU supports and at the scalar
// one (kernels/cpu/simd.h), printing the levels it cannot compare, and restores the level after.
#pragma once

#include <cstdio>

#include "kernels/cpu/simd.h"

namespace zt::test {

template <class F>
void for_each_simd_level(F f) {
  const SimdLevel before = cpu::simd_level();
  for (SimdLevel l : {SimdLevel::Scalar, SimdLevel::Avx2, SimdLevel::Avx512}) {
    if (!simd_level_supported(l)) {
      std::printf("SIMD level %s: not supported by this CPU, not compared\n", simd_level_name(l));
      continue;
    }
    cpu::set_simd_level(l);
    f(l);
  }
  cpu::set_simd_level(before);
}

}  // namespace zt::test
