// EnvReport: what `zerotrain env` prints — build facts, components compiled in, CUDA / NCCL /
// cuBLAS / MPI / OpenBLAS versions, GPUs, the CPU's SIMD level and model, and host RAM.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace zt {

struct GpuDescription {
  int index = 0;
  std::string name;
  uint64_t memory_bytes = 0;
  std::string compute_capability;  // "9.0"
};

struct EnvReport {
  // Build (from the generated build_info.h).
  std::string version, git_commit, build_type, cxx_compiler, cuda_compiler, blas_libraries;
  // Components compiled in.
  bool with_cuda = false, with_nccl = false, with_mpi = false, with_openblas = false;
  // CUDA: "not built", "no driver", or versions like "13.0".
  std::string cuda_runtime = "not built", cuda_driver = "not built";
  std::vector<GpuDescription> gpus;  // empty: none
  std::string gpu_note = "none";     // why there are no GPUs ("no driver", "no device", ...)
  std::string nccl_version = "not built", cublas_version = "not built";
  std::string mpi_library = "not built";
  std::string openblas_config = "unknown";
  // CPU and host.
  std::string cpu_model = "unknown";
  std::string simd_level = "none";  // the level that runs (base/simd.h): "AVX-512", "AVX2", "none"
  std::string simd_note;            // why ZT_SIMD cannot be honoured, when it cannot ("" otherwise)
  std::vector<std::string> cpu_features;  // SIMD features the CPU reports at run time
  unsigned logical_cpus = 0;
  uint64_t host_mem_total = 0, host_mem_available = 0;
  // Transparent huge pages: "always", "madvise" (granted to the large host buffers, which ask),
  // "never" or "unknown" (base/host_pages.h).
  std::string huge_pages = "unknown";
};

EnvReport collect_env_report();
nlohmann::json env_report_to_json(const EnvReport& r);
std::string env_report_to_text(const EnvReport& r);

// Per-library pieces, each in its own file, compiled only when that library is built in.
void query_cpu_env(EnvReport& r);      // env_cpu.cpp (always)
void query_openblas_env(EnvReport& r); // env_openblas.cpp (always: OpenBLAS is required)
void query_cuda_env(EnvReport& r);     // env_cuda.cpp (ZT_CUDA)
void query_nccl_env(EnvReport& r);     // env_nccl.cpp (ZT_CUDA)
void query_cublas_env(EnvReport& r);   // env_cublas.cpp (ZT_CUDA)
void query_mpi_env(EnvReport& r);      // env_mpi.cpp (ZT_MPI)

// Parses /proc/cpuinfo text for the first "model name".
std::string cpu_model_from_cpuinfo(const std::string& text);

}  // namespace zt
