// Run-time SIMD dispatch for the CPU backend's row and elementwise kernels: each kernel body is
// compiled for AVX-512, AVX2+FMA and baseline x86-64, and the widest the CPU supports runs.
#pragma once

#include "base/simd.h"

namespace zt::cpu {

// Which compiled variant the kernels run: base/simd.h's level (ZT_SIMD may force avx512 | avx2 |
// scalar; an unsupported value throws naming what this CPU has), resolved once per process.
SimdLevel simd_level();
// Forces a level (tests compare the variants); throws std::runtime_error when the CPU lacks it.
void set_simd_level(SimdLevel level);

// Every variant runs the same operations in the same order per element, with no fused multiply-add
// (-ffp-contract=off on these files): elementwise results are bitwise equal across variants; only
// sums along a row differ, because the vector width sets how partial sums are grouped. None of it
// depends on the thread count.

}  // namespace zt::cpu

// A kernel body: always inlined, so it compiles with the ISA of the variant that calls it.
#define ZT_SIMD_INLINE inline __attribute__((always_inline))

#if defined(__x86_64__)
#define ZT_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")))
#define ZT_TARGET_AVX2 __attribute__((target("avx2,fma")))
#else
#define ZT_TARGET_AVX512
#define ZT_TARGET_AVX2
#endif

// Defines `static void NAME PARAMS` that calls, compiled for the current level, the body AVX512_BODY,
// AVX2_BODY or SCALAR_BODY with ARGS. PARAMS is the parenthesised parameter list, ARGS the
// parenthesised argument names.
#define ZT_SIMD_DISPATCH_BODIES(NAME, PARAMS, ARGS, AVX512_BODY, AVX2_BODY, SCALAR_BODY) \
  ZT_TARGET_AVX512 static void NAME##_avx512 PARAMS { AVX512_BODY ARGS; }                 \
  ZT_TARGET_AVX2 static void NAME##_avx2 PARAMS { AVX2_BODY ARGS; }                       \
  static void NAME##_scalar PARAMS { SCALAR_BODY ARGS; }                                  \
  static void NAME PARAMS {                                                               \
    switch (::zt::cpu::simd_level()) {                                                    \
      case ::zt::SimdLevel::Avx512: NAME##_avx512 ARGS; return;                           \
      case ::zt::SimdLevel::Avx2: NAME##_avx2 ARGS; return;                               \
      case ::zt::SimdLevel::Scalar: break;                                                \
    }                                                                                     \
    NAME##_scalar ARGS;                                                                   \
  }

// The same body for every level: NAME##_body ARGS, compiled three times.
#define ZT_SIMD_DISPATCH(NAME, PARAMS, ARGS) \
  ZT_SIMD_DISPATCH_BODIES(NAME, PARAMS, ARGS, NAME##_body, NAME##_body, NAME##_body)
