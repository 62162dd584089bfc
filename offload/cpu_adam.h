// CPU Adam/AdamW over a flat fp32 shard: AVX-512, AVX2+FMA and scalar paths chosen at run time,
// OpenMP across cores, with an optional fused bf16/fp16 working copy written in the same pass.
#pragma once

#include <cstddef>
#include <optional>

#include "base/adam_math.h"
#include "base/dtype.h"
#include "base/simd.h"

namespace zt::offload {

// Optional low-precision copy of the updated params, written in the same pass.
struct AdamOutput {
  void* data = nullptr;       // n elements of `dtype`; nullptr = no copy
  DType dtype = DType::BF16;  // BF16 or F16 (round to nearest even; NaN stays NaN)
};

struct CpuAdamOptions {
  // The SIMD level a call runs: unset = base/simd.h's rule at the call (ZT_SIMD, else the widest
  // this CPU has); a level given is checked against the CPU the same way (std::runtime_error).
  std::optional<SimdLevel> level;
  int num_threads = 0;  // 0 = omp_get_max_threads()
};

// One Adam/AdamW step over exactly n elements (nothing beyond n is read or written).
// Math, in this order for every element and every path (no fused multiply-add anywhere):
//   gi   = g * grad_scale
//   gi   = gi + weight_decay * p                       (L2 only: decoupled == false)
//   m    = beta1 * m + (1 - beta1) * gi
//   v    = beta2 * v + (1 - beta2) * (gi * gi)
//   den  = sqrt(v) * inv_sqrt_bc2 + eps                inv_sqrt_bc2 = 1/sqrt(1 - beta2^step)
//   p    = p * decay                                   decay = 1 - lr * weight_decay (AdamW only)
//   p    = p - step_size * (m / den)                   step_size = lr / (1 - beta1^step)
// Without bias correction inv_sqrt_bc2 = 1 and step_size = lr. The per-step constants are
// computed once in double and rounded to float (see make_adam_consts), so all three paths give
// bitwise identical p, m, v and low-precision copies; results do not depend on the thread count.
void cpu_adam_step(float* p, const float* g, float* m, float* v, size_t n, const AdamWHyper& h,
                   AdamOutput out = {}, const CpuAdamOptions& opt = {});

// Conversions used by the fused copy (exposed for tests and for a separate conversion pass):
// round to nearest even; NaN -> quiet NaN with the sign and top payload bits kept.
void convert_f32(void* dst, DType dtype, const float* src, size_t n, const CpuAdamOptions& opt = {});

namespace detail {

// Per-step constants shared by every path: base/adam_math.h's scalars (float, rounded once from double).
using AdamConsts = AdamScalars;
inline AdamConsts make_adam_consts(const AdamWHyper& h) { return adam_scalars(h); }

// out_kind: 0 = no copy, 1 = bf16, 2 = fp16. Single-threaded over [0, n).
using AdamRangeFn = void (*)(float* p, const float* g, float* m, float* v, size_t n,
                             const AdamConsts& c, void* out, int out_kind);
void adam_range_scalar(float*, const float*, float*, float*, size_t, const AdamConsts&, void*, int);
void adam_range_avx2(float*, const float*, float*, float*, size_t, const AdamConsts&, void*, int);
void adam_range_avx512(float*, const float*, float*, float*, size_t, const AdamConsts&, void*, int);

using ConvertRangeFn = void (*)(void* dst, int out_kind, const float* src, size_t n);
void convert_range_scalar(void*, int, const float*, size_t);
void convert_range_avx2(void*, int, const float*, size_t);
void convert_range_avx512(void*, int, const float*, size_t);

}  // namespace detail
}  // namespace zt::offload
