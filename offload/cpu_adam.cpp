// CPU Adam dispatcher: runs the SIMD level base/simd.h resolves (CPU features, ZT_SIMD), folds the hyper-parameters into
// per-step constants once, and splits the shard over OpenMP threads in static, size-based chunks.
#include "offload/cpu_adam.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace zt::offload {
namespace {

// Below this many elements per thread the fork/join costs more than the work.
constexpr size_t kMinElemsPerThread = 32768;
// Chunk boundaries fall on 64-byte lines so no two threads write the same cache line.
constexpr size_t kChunkAlign = 16;

int out_kind_of(const AdamOutput& out) {
  if (!out.data) return 0;
  if (out.dtype == DType::BF16) return 1;
  if (out.dtype == DType::F16) return 2;
  throw std::invalid_argument("cpu_adam_step: the low-precision copy must be bf16 or fp16, got " +
                              std::string(dtype_name(out.dtype)));
}

int thread_count(size_t n, int requested) {
  const int max_t = requested > 0 ? requested : omp_get_max_threads();
  const size_t useful = std::max<size_t>(1, n / kMinElemsPerThread);
  return static_cast<int>(std::min<size_t>(static_cast<size_t>(std::max(1, max_t)), useful));
}

// [begin, end) of thread t among T over n elements, aligned to kChunkAlign.
void chunk(size_t n, int t, int T, size_t& begin, size_t& end) {
  auto edge = [&](int k) {
    if (k >= T) return n;
    const size_t e = (n / kChunkAlign) * static_cast<size_t>(k) / static_cast<size_t>(T) * kChunkAlign;
    return std::min(e, n);
  };
  begin = edge(t);
  end = edge(t + 1);
}

// The level a call runs: the one it asks for, checked, or base/simd.h's rule.
SimdLevel level_of(const CpuAdamOptions& opt) {
  return opt.level ? checked_simd_level(*opt.level, "requested") : resolve_simd_level();
}

detail::AdamRangeFn adam_fn(SimdLevel path) {
  switch (path) {
    case SimdLevel::Avx512: return detail::adam_range_avx512;
    case SimdLevel::Avx2: return detail::adam_range_avx2;
    default: return detail::adam_range_scalar;
  }
}

detail::ConvertRangeFn convert_fn(SimdLevel path) {
  switch (path) {
    case SimdLevel::Avx512: return detail::convert_range_avx512;
    case SimdLevel::Avx2: return detail::convert_range_avx2;
    default: return detail::convert_range_scalar;
  }
}

}  // namespace

void cpu_adam_step(float* p, const float* g, float* m, float* v, size_t n, const AdamWHyper& h,
                   AdamOutput out, const CpuAdamOptions& opt) {
  const int out_kind = out_kind_of(out);
  const detail::AdamConsts c = detail::make_adam_consts(h);
  const detail::AdamRangeFn fn = adam_fn(level_of(opt));
  if (n == 0) return;
  const int T = thread_count(n, opt.num_threads);
  auto* o16 = static_cast<uint16_t*>(out.data);
#pragma omp parallel num_threads(T)
  {
    size_t b = 0, e = 0;
    chunk(n, omp_get_thread_num(), omp_get_num_threads(), b, e);
    if (e > b) fn(p + b, g + b, m + b, v + b, e - b, c, o16 ? o16 + b : nullptr, out_kind);
  }
}

void convert_f32(void* dst, DType dtype, const float* src, size_t n, const CpuAdamOptions& opt) {
  const int kind = out_kind_of(AdamOutput{dst, dtype});
  if (kind == 0 || n == 0) return;
  const detail::ConvertRangeFn fn = convert_fn(level_of(opt));
  const int T = thread_count(n, opt.num_threads);
  auto* o16 = static_cast<uint16_t*>(dst);
#pragma omp parallel num_threads(T)
  {
    size_t b = 0, e = 0;
    chunk(n, omp_get_thread_num(), omp_get_num_threads(), b, e);
    if (e > b) fn(o16 + b, kind, src + b, e - b);
  }
}

}  // namespace zt::offload
