// The SIMD rule: CPU features read with __builtin_cpu_supports, ZT_SIMD checked against them.
#include "base/simd.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <cstdlib>
#include <stdexcept>

namespace zt {

const char* simd_level_name(SimdLevel level) {
  switch (level) {
    case SimdLevel::Avx512: return "avx512";
    case SimdLevel::Avx2: return "avx2";
    case SimdLevel::Scalar: break;
  }
  return "scalar";
}

SimdLevel parse_simd_level(const std::string& name) {
  if (name == "avx512") return SimdLevel::Avx512;
  if (name == "avx2") return SimdLevel::Avx2;
  if (name == "scalar") return SimdLevel::Scalar;
  throw std::invalid_argument("unknown SIMD level '" + name + "': use avx512, avx2, scalar or auto");
}

#if defined(__x86_64__) || defined(__i386__)
namespace {

// F16C from CPUID leaf 1 (ECX bit 29): clang's __builtin_cpu_supports does not know "f16c".
bool cpu_has_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
}

}  // namespace
#endif

bool simd_level_supported(SimdLevel level) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  switch (level) {
    case SimdLevel::Scalar: return true;
    case SimdLevel::Avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
    case SimdLevel::Avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl");
  }
  return false;
#else
  return level == SimdLevel::Scalar;
#endif
}

std::string supported_simd_levels() {
  std::string s = "scalar";
  if (simd_level_supported(SimdLevel::Avx2)) s += ", avx2";
  if (simd_level_supported(SimdLevel::Avx512)) s += ", avx512";
  return s;
}

SimdLevel checked_simd_level(SimdLevel level, const std::string& origin) {
  if (!simd_level_supported(level))
    throw std::runtime_error(origin + ": this CPU does not support the " + simd_level_name(level) +
                             " path (it supports: " + supported_simd_levels() +
                             "); unset ZT_SIMD or pick one of those");
  return level;
}

SimdLevel resolve_simd_level() {
  const char* env = std::getenv("ZT_SIMD");
  if (env && *env && std::string(env) != "auto") {
    SimdLevel asked;
    try {
      asked = parse_simd_level(env);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(std::string("ZT_SIMD=") + env + ": " + e.what());
    }
    return checked_simd_level(asked, std::string("ZT_SIMD=") + env);
  }
  if (simd_level_supported(SimdLevel::Avx512)) return SimdLevel::Avx512;
  if (simd_level_supported(SimdLevel::Avx2)) return SimdLevel::Avx2;
  return SimdLevel::Scalar;
}

}  // namespace zt
