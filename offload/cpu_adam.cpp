// CPU Adam dispatcher: picks the SIMD path (CPU features, ZT_SIMD), folds the hyper-parameters into
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

std::string supported_list() {
  std::string s = "scalar";
  if (simd_path_supported(SimdPath::Avx2)) s += ", avx2";
  if (simd_path_supported(SimdPath::Avx512)) s += ", avx512";
  return s;
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

}  // namespace

const char* simd_path_name(SimdPath path) {
  switch (path) {
    case SimdPath::Auto: return "auto";
    case SimdPath::Avx512: return "avx512";
    case SimdPath::Avx2: return "avx2";
    case SimdPath::Scalar: return "scalar";
  }
  return "?";
}

SimdPath parse_simd_path(const std::string& name) {
  if (name == "avx512") return SimdPath::Avx512;
  if (name == "avx2") return SimdPath::Avx2;
  if (name == "scalar") return SimdPath::Scalar;
  if (name == "auto") return SimdPath::Auto;
  throw std::invalid_argument("unknown SIMD path '" + name + "': use avx512, avx2, scalar or auto");
}

bool simd_path_supported(SimdPath path) {
  __builtin_cpu_init();
  switch (path) {
    case SimdPath::Auto:
    case SimdPath::Scalar: return true;
    case SimdPath::Avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
    case SimdPath::Avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl");
  }
  return false;
}

SimdPath resolve_simd_path(SimdPath requested) {
  std::string origin = "requested";
  if (requested == SimdPath::Auto) {
    const char* env = std::getenv("ZT_SIMD");
    if (env && *env) {
      try {
        requested = parse_simd_path(env);
      } catch (const std::invalid_argument& e) {
        throw std::runtime_error(std::string("ZT_SIMD=") + env + ": " + e.what());
      }
      origin = std::string("ZT_SIMD=") + env;
    }
  }
  if (requested == SimdPath::Auto) {
    if (simd_path_supported(SimdPath::Avx512)) return SimdPath::Avx512;
    if (simd_path_supported(SimdPath::Avx2)) return SimdPath::Avx2;
    return SimdPath::Scalar;
  }
  if (!simd_path_supported(requested)) {
    throw std::runtime_error(origin + ": this CPU does not support the " + simd_path_name(requested) +
                             " path (it supports: " + supported_list() + "); unset ZT_SIMD or pick one of those");
  }
  return requested;
}

namespace {

detail::AdamRangeFn adam_fn(SimdPath path) {
  switch (path) {
    case SimdPath::Avx512: return detail::adam_range_avx512;
    case SimdPath::Avx2: return detail::adam_range_avx2;
    default: return detail::adam_range_scalar;
  }
}

detail::ConvertRangeFn convert_fn(SimdPath path) {
  switch (path) {
    case SimdPath::Avx512: return detail::convert_range_avx512;
    case SimdPath::Avx2: return detail::convert_range_avx2;
    default: return detail::convert_range_scalar;
  }
}

}  // namespace

void cpu_adam_step(float* p, const float* g, float* m, float* v, size_t n, const AdamWHyper& h,
                   AdamOutput out, const CpuAdamOptions& opt) {
  const int out_kind = out_kind_of(out);
  const detail::AdamConsts c = detail::make_adam_consts(h);
  const detail::AdamRangeFn fn = adam_fn(resolve_simd_path(opt.path));
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
  const detail::ConvertRangeFn fn = convert_fn(resolve_simd_path(opt.path));
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
