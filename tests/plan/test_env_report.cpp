// `zerotrain env`: the report has every field, reflects the build's components, and the command
// prints one JSON object with --json.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>
#include <unistd.h>

#include "build_info.h"
#include "runtime/cli/subcommands.h"
#include "runtime/plan/env_report.h"

namespace zt {
namespace {

TEST(EnvReport, JsonHasEveryField) {
  const nlohmann::json j = env_report_to_json(collect_env_report());
  for (const char* k : {"version", "git_commit", "build_type", "cxx_compiler", "cuda_compiler", "blas_libraries",
                        "components", "cuda", "gpus", "gpu_note", "nccl_version", "cublas_version", "mpi_library",
                        "openblas_config", "cpu", "host_memory"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  for (const char* k : {"cuda", "nccl", "mpi", "openblas"}) EXPECT_TRUE(j["components"][k].is_boolean()) << k;
  EXPECT_TRUE(j["cuda"].contains("runtime"));
  EXPECT_TRUE(j["cuda"].contains("driver"));
  EXPECT_TRUE(j["gpus"].is_array());
  for (const char* k : {"model", "simd_level", "features", "logical_cpus"}) EXPECT_TRUE(j["cpu"].contains(k)) << k;
  EXPECT_EQ(j["version"], ZT_VERSION);
  EXPECT_EQ(j["git_commit"], ZT_GIT_COMMIT);
  EXPECT_EQ(j["build_type"], ZT_BUILD_TYPE);
  EXPECT_GT(j["host_memory"]["total_bytes"].get<uint64_t>(), 0u);
  const std::string huge = j["host_memory"]["huge_pages"];
  EXPECT_TRUE(huge == "always" || huge == "madvise" || huge == "never" || huge == "unknown") << huge;
  EXPECT_NE(env_report_to_text(collect_env_report()).find("huge pages             " + huge), std::string::npos);
  const std::string simd = j["cpu"]["simd_level"];
  EXPECT_TRUE(simd == "AVX-512" || simd == "AVX2" || simd == "none") << simd;
}

TEST(EnvReport, ComponentsMatchTheBuild) {
  const EnvReport r = collect_env_report();
  EXPECT_EQ(r.with_cuda, bool(ZT_HAVE_CUDA));
  EXPECT_EQ(r.with_nccl, bool(ZT_HAVE_CUDA));
  EXPECT_EQ(r.with_mpi, bool(ZT_HAVE_MPI));
  EXPECT_TRUE(r.with_openblas);
  EXPECT_NE(r.openblas_config.find("OpenBLAS"), std::string::npos) << r.openblas_config;
#if ZT_HAVE_CUDA
  EXPECT_NE(r.cuda_runtime, "not built");
  EXPECT_NE(r.cuda_runtime.find('.'), std::string::npos);
  EXPECT_EQ(r.nccl_version.rfind("2.", 0), 0u) << r.nccl_version;
  EXPECT_NE(r.cublas_version, "not built");
  // With no driver the report says so and lists no GPUs; with one, each GPU has a name and memory.
  if (r.cuda_driver == "no driver") {
    EXPECT_TRUE(r.gpus.empty());
  }
  for (const auto& g : r.gpus) {
    EXPECT_FALSE(g.name.empty());
    EXPECT_GT(g.memory_bytes, 0u);
    EXPECT_NE(g.compute_capability.find('.'), std::string::npos);
  }
#endif
#if ZT_HAVE_MPI
  EXPECT_NE(r.mpi_library, "not built");
  EXPECT_FALSE(r.mpi_library.empty());
#endif
  // The text form names each section.
  const std::string t = env_report_to_text(r);
  for (const char* k : {"version", "CUDA runtime", "CUDA driver", "NCCL", "MPI library", "OpenBLAS", "SIMD (run time)",
                        "host RAM"}) {
    EXPECT_NE(t.find(k), std::string::npos) << k;
  }
}

TEST(EnvReport, CpuModelFromCpuinfo) {
  EXPECT_EQ(cpu_model_from_cpuinfo("processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Gold 6248\nflags : x\n"),
            "Intel(R) Xeon(R) Gold 6248");
  EXPECT_EQ(cpu_model_from_cpuinfo("processor : 0\n"), "unknown");
}

TEST(EnvCommand, JsonFlagPrintsOneObject) {
  CLI::App app;
  int exit_code = -1;
  register_env_command(app, exit_code);
  // Capture stdout through a temporary file.
  std::fflush(stdout);
  char path[] = "/tmp/zt_env_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const int saved = dup(1);
  dup2(fd, 1);
  const char* argv[] = {"zerotrain", "env", "--json"};
  app.parse(3, const_cast<char**>(argv));
  std::fflush(stdout);
  dup2(saved, 1);
  close(saved);
  close(fd);
  FILE* f = std::fopen(path, "r");
  ASSERT_NE(f, nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  std::fclose(f);
  std::remove(path);
  EXPECT_EQ(exit_code, 0);
  const nlohmann::json j = nlohmann::json::parse(out);  // throws (fails the test) unless one object
  EXPECT_TRUE(j.is_object());
  EXPECT_TRUE(j.contains("gpus"));
}

}  // namespace
}  // namespace zt
