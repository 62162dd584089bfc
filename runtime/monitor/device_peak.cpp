// DevicePeak: a small datasheet table for GPUs and a timed GEMM for everything else.
#include "runtime/monitor/device_peak.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "runtime/plan/env_report.h"

namespace zt {

double datasheet_bf16_peak(const std::string& name) {
  // Dense (no sparsity) bf16 tensor-core peaks, SXM parts, from NVIDIA's datasheets.
  struct Row {
    const char* key;
    double tflops;
  };
  static const Row rows[] = {{"H200", 989}, {"H100 PCIe", 756}, {"H100", 989}, {"H800", 989}, {"GH200", 989},
                             {"B200", 2250}, {"A100", 312},      {"A800", 312}, {"L40S", 362}, {"A10G", 70},
                             {"L4", 121}};
  for (const auto& r : rows)
    if (name.find(r.key) != std::string::npos) return r.tflops * 1e12;
  return 0;
}

double measure_gemm_rate(Backend& b, int N, int IC, int OC) {
  const size_t es = dtype_size(b.act_dtype());
  void* inp = b.alloc(size_t(N) * IC * es);
  void* w = b.alloc(size_t(OC) * IC * es);
  void* out = b.alloc(size_t(N) * OC * es);
  b.zero(inp, size_t(N) * IC * es);
  b.zero(w, size_t(OC) * IC * es);
  b.matmul_forward(out, inp, w, nullptr, N, IC, OC);  // warm-up (first-touch, thread start-up)
  b.synchronize();
  double best = 1e30, spent = 0;
  for (int rep = 0; rep < 50 && (rep < 3 || spent < 0.2); ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    b.matmul_forward(out, inp, w, nullptr, N, IC, OC);
    b.synchronize();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, s);
    spent += s;
  }
  b.free(inp);
  b.free(w);
  b.free(out);
  return 2.0 * N * double(IC) * OC / best;
}

DevicePeak device_peak(Backend& backend, int rows, int C) {
#if ZT_HAVE_CUDA
  if (backend.name() == "cuda") {
    EnvReport r;
    query_cuda_env(r);
    if (!r.gpus.empty())
      if (const double p = datasheet_bf16_peak(r.gpus.front().name); p > 0)
        return {p, r.gpus.front().name + ": dense bf16 datasheet peak"};
  }
#endif
  const int N = std::max(rows, 256);
  char src[160];
  std::snprintf(src, sizeof src, "%s: GEMM %dx%dx%d measured at start-up", backend.name().c_str(), N, C, 4 * C);
  return {measure_gemm_rate(backend, N, C, 4 * C), src};
}

}  // namespace zt
