// collect_env_report: gathers build facts and asks each compiled-in library for its version;
// env_report_to_json / env_report_to_text: the two output forms of `zerotrain env`.
#include "runtime/plan/env_report.h"

#include <nlohmann/json.hpp>

#include <cstdio>

#include "build_info.h"
#include "runtime/plan/units.h"

namespace zt {

EnvReport collect_env_report() {
  EnvReport r;
  r.version = ZT_VERSION;
  r.git_commit = ZT_GIT_COMMIT;
  r.build_type = ZT_BUILD_TYPE;
  r.cxx_compiler = ZT_CXX_COMPILER;
  r.cuda_compiler = ZT_CUDA_COMPILER;
  r.blas_libraries = ZT_BLAS_LIBRARIES;
  if (r.cuda_compiler == " ") r.cuda_compiler = "not used";
  query_cpu_env(r);
  query_openblas_env(r);
#if ZT_HAVE_CUDA
  query_cuda_env(r);
  query_nccl_env(r);
  query_cublas_env(r);
#else
  r.gpu_note = "none (built without CUDA)";
#endif
#if ZT_HAVE_MPI
  query_mpi_env(r);
#endif
  return r;
}

nlohmann::json env_report_to_json(const EnvReport& r) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : r.gpus) {
    gpus.push_back({{"index", g.index},
                    {"name", g.name},
                    {"memory_bytes", g.memory_bytes},
                    {"compute_capability", g.compute_capability}});
  }
  return {
      {"version", r.version},
      {"git_commit", r.git_commit},
      {"build_type", r.build_type},
      {"cxx_compiler", r.cxx_compiler},
      {"cuda_compiler", r.cuda_compiler},
      {"blas_libraries", r.blas_libraries},
      {"components", {{"cuda", r.with_cuda}, {"nccl", r.with_nccl}, {"mpi", r.with_mpi}, {"openblas", r.with_openblas}}},
      {"cuda", {{"runtime", r.cuda_runtime}, {"driver", r.cuda_driver}}},
      {"gpus", gpus},
      {"gpu_note", r.gpu_note},
      {"nccl_version", r.nccl_version},
      {"cublas_version", r.cublas_version},
      {"mpi_library", r.mpi_library},
      {"openblas_config", r.openblas_config},
      {"cpu", {{"model", r.cpu_model}, {"simd_level", r.simd_level}, {"simd_note", r.simd_note},
               {"features", r.cpu_features}, {"logical_cpus", r.logical_cpus}}},
      {"host_memory", {{"total_bytes", r.host_mem_total}, {"available_bytes", r.host_mem_available}, {"huge_pages", r.huge_pages}}},
  };
}

std::string env_report_to_text(const EnvReport& r) {
  std::string out;
  auto line = [&](const char* key, const std::string& value) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%-22s ", key);
    out += buf + value + "\n";
  };
  auto yn = [](bool b) { return b ? std::string("yes") : std::string("no"); };
  out += "zerotrain environment report\n";
  line("version", r.version + " (commit " + r.git_commit + ")");
  line("build type", r.build_type);
  line("C++ compiler", r.cxx_compiler);
  line("CUDA compiler", r.cuda_compiler);
  line("BLAS libraries", r.blas_libraries);
  line("components", "CUDA " + yn(r.with_cuda) + ", NCCL " + yn(r.with_nccl) + ", MPI " + yn(r.with_mpi) +
                         ", OpenBLAS " + yn(r.with_openblas));
  line("CUDA runtime", r.cuda_runtime);
  line("CUDA driver", r.cuda_driver);
  if (r.gpus.empty()) {
    line("GPUs", r.gpu_note);
  } else {
    for (const auto& g : r.gpus) {
      line(("GPU " + std::to_string(g.index)).c_str(),
           g.name + ", " + format_gib(double(g.memory_bytes), 1) + ", compute capability " + g.compute_capability);
    }
  }
  line("NCCL", r.nccl_version);
  line("cuBLAS(Lt)", r.cublas_version);
  line("MPI library", r.mpi_library);
  line("OpenBLAS", r.openblas_config);
  line("CPU", r.cpu_model + " (" + std::to_string(r.logical_cpus) + " logical CPUs)");
  std::string feats;
  for (const auto& f : r.cpu_features) feats += (feats.empty() ? "" : " ") + f;
  line("SIMD (run time)", r.simd_level + (feats.empty() ? std::string() : " [" + feats + "]") +
                               (r.simd_note.empty() ? std::string() : "; " + r.simd_note));
  line("host RAM", format_gib(double(r.host_mem_total), 1) + " total, " +
                       format_gib(double(r.host_mem_available), 1) + " available");
  line("huge pages", r.huge_pages + (r.huge_pages == "madvise" || r.huge_pages == "always"
                                         ? std::string(" (host buffers of 2 MiB and more ask for them)")
                                         : std::string(" (host buffers stay on 4 KiB pages)")));
  return out;
}

}  // namespace zt
