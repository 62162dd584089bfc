// The CPU half of `zerotrain env`: model name from /proc/cpuinfo, the SIMD features the CPU reports
// (__builtin_cpu_supports) and the level that runs (base/simd.h), logical CPU count, host RAM from /proc/meminfo, and the kernel's
// transparent-huge-page mode.
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "base/host_pages.h"
#include "base/simd.h"
#include "runtime/plan/env_report.h"
#include "runtime/plan/machine_probe.h"

namespace zt {

std::string cpu_model_from_cpuinfo(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string v = line.substr(colon + 1);
    const auto b = v.find_first_not_of(" \t");
    return b == std::string::npos ? std::string() : v.substr(b);
  }
  return "unknown";
}

void query_cpu_env(EnvReport& r) {
  std::ifstream f("/proc/cpuinfo");
  if (f) {
    std::stringstream ss;
    ss << f.rdbuf();
    r.cpu_model = cpu_model_from_cpuinfo(ss.str());
  }
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) r.cpu_features.push_back("avx2");
  if (__builtin_cpu_supports("fma")) r.cpu_features.push_back("fma");
  if (__builtin_cpu_supports("avx512f")) r.cpu_features.push_back("avx512f");
  if (__builtin_cpu_supports("avx512bw")) r.cpu_features.push_back("avx512bw");
  if (__builtin_cpu_supports("avx512vl")) r.cpu_features.push_back("avx512vl");
  if (__builtin_cpu_supports("avx512bf16")) r.cpu_features.push_back("avx512bf16");
#endif
  // The level the kernels, the CPU Adam and the checksum run: base/simd.h's rule, ZT_SIMD honoured.
  SimdLevel level = SimdLevel::Scalar;
  try {
    level = resolve_simd_level();
  } catch (const std::runtime_error& e) {
    r.simd_note = e.what();  // a ZT_SIMD that a run would refuse, said as the run would
  }
  r.simd_level = level == SimdLevel::Avx512 ? "AVX-512" : level == SimdLevel::Avx2 ? "AVX2" : "none";
  r.logical_cpus = std::thread::hardware_concurrency();
  const MachineFacts m = probe_machine();
  r.host_mem_total = m.host_mem_total;
  r.host_mem_available = m.host_mem_available;
  r.huge_pages = huge_pages_mode();
}

}  // namespace zt
