// GPU benchmarks: (a) fused multi-tensor AdamW bandwidth vs the device-to-device copy bandwidth
// measured in the same run, (b) cuBLASLt bf16 GEMM TFLOP/s vs the H200 dense peak and the
// workplace's measured 8192³ figure. CUDA events, warm-up, median of many runs; table + JSON lines.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "base/cuda_check.h"
#include "kernels/cuda/fused_adamw.h"
#include "kernels/cuda/matmul.cuh"

namespace {

constexpr double kH200PeakBf16TFlops = 989.0;   // dense bf16 tensor-core peak (datasheet)
constexpr double kMeasuredGemmTFlops = 780.0;   // 8192³ measured on such a machine (NOTES.md, 770–790)

struct Row {
  std::string name, unit;
  double value, peer;
  std::string peer_name;
};

// Median milliseconds of `reps` timed runs after `warm` untimed ones, each timed with events.
double median_ms(cudaStream_t s, int warm, int reps, const std::function<void()>& fn) {
  cudaEvent_t a, b;
  ZT_CUDA_CHECK(cudaEventCreate(&a));
  ZT_CUDA_CHECK(cudaEventCreate(&b));
  for (int i = 0; i < warm; ++i) fn();
  std::vector<float> t(reps);
  for (int i = 0; i < reps; ++i) {
    ZT_CUDA_CHECK(cudaEventRecord(a, s));
    fn();
    ZT_CUDA_CHECK(cudaEventRecord(b, s));
    ZT_CUDA_CHECK(cudaEventSynchronize(b));
    ZT_CUDA_CHECK(cudaEventElapsedTime(&t[i], a, b));
  }
  ZT_CUDA_CHECK(cudaEventDestroy(a));
  ZT_CUDA_CHECK(cudaEventDestroy(b));
  std::sort(t.begin(), t.end());
  return t[reps / 2];
}

__attribute__((unused)) void fill(void* p, size_t bytes, cudaStream_t s) { ZT_CUDA_CHECK(cudaMemsetAsync(p, 0x3c, bytes, s)); }

}  // namespace

int main(int argc, char** argv) {
  int ndev = 0;
  cudaError_t e = cudaGetDeviceCount(&ndev);
  if (e != cudaSuccess || ndev == 0) {
    std::printf("bench_gpu: no usable GPU (%s): skipped\n", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return 77;
  }
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  cudaDeviceProp prop{};
  ZT_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  ZT_CUDA_CHECK(cudaSetDevice(0));
  cudaStream_t s;
  ZT_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::vector<Row> rows;
  std::vector<std::string> json;
  char buf[1024];

  // ---- (a) copy bandwidth and fused AdamW -------------------------------------------------
  const size_t n = quick ? (size_t(1) << 24) : (size_t(1) << 28);  // 268M params
  {
    const size_t cbytes = size_t(1) << 30;
    void *src, *dst;
    ZT_CUDA_CHECK(cudaMalloc(&src, cbytes));
    ZT_CUDA_CHECK(cudaMalloc(&dst, cbytes));
    fill(src, cbytes, s);
    const double ms = median_ms(s, 3, 20, [&] { ZT_CUDA_CHECK(cudaMemcpyAsync(dst, src, cbytes, cudaMemcpyDeviceToDevice, s)); });
    const double copy_tbs = 2.0 * cbytes / (ms * 1e-3) / 1e12;  // bytes read + written
    rows.push_back({"d2d copy 1 GiB", "TB/s (read+write)", copy_tbs, 4.3, "NOTES 4.3"});
    std::snprintf(buf, sizeof buf,
                  "{\"bench\":\"d2d_copy\",\"device\":\"%s\",\"bytes\":%zu,\"median_ms\":%.4f,\"tb_per_s\":%.4f}",
                  prop.name, cbytes, ms, copy_tbs);
    json.push_back(buf);
    ZT_CUDA_CHECK(cudaFree(src));
    ZT_CUDA_CHECK(cudaFree(dst));

    for (zt::DType gdt : {zt::DType::BF16, zt::DType::F32}) {
      float *p, *m, *v;
      void *g, *w;
      ZT_CUDA_CHECK(cudaMalloc(&p, n * 4));
      ZT_CUDA_CHECK(cudaMalloc(&m, n * 4));
      ZT_CUDA_CHECK(cudaMalloc(&v, n * 4));
      ZT_CUDA_CHECK(cudaMalloc(&g, n * zt::dtype_size(gdt)));
      ZT_CUDA_CHECK(cudaMalloc(&w, n * 2));
      fill(p, n * 4, s);
      fill(m, n * 4, s);
      ZT_CUDA_CHECK(cudaMemsetAsync(v, 0, n * 4, s));
      fill(g, n * zt::dtype_size(gdt), s);
      for (int nchunks : {1, 64}) {
        std::vector<zt::AdamWChunk> ch;
        const size_t per = n / nchunks;
        for (int c = 0; c < nchunks; ++c) {
          const size_t off = c * per, len = c == nchunks - 1 ? n - off : per;
          ch.push_back({p + off, static_cast<char*>(g) + off * zt::dtype_size(gdt), m + off, v + off,
                        static_cast<char*>(w) + off * 2, len});
        }
        zt::AdamWHyper h;
        h.weight_decay = 0.01f;
        const double ms = median_ms(s, 3, quick ? 5 : 20, [&] { zt::fused_adamw(ch.data(), ch.size(), gdt, h, s); });
        const size_t bpp = zt::fused_adamw_bytes_per_param(gdt, true);
        const double tbs = double(bpp) * n / (ms * 1e-3) / 1e12;
        const std::string name = std::string("fused AdamW grad ") + zt::dtype_name(gdt) + " " +
                                 std::to_string(nchunks) + " chunk(s)";
        rows.push_back({name, "TB/s", tbs, copy_tbs, "copy"});
        std::snprintf(buf, sizeof buf,
                      "{\"bench\":\"fused_adamw\",\"device\":\"%s\",\"params\":%zu,\"chunks\":%d,\"grad_dtype\":\"%s\","
                      "\"bytes_per_param\":%zu,\"median_ms\":%.4f,\"tb_per_s\":%.4f,\"copy_tb_per_s\":%.4f,"
                      "\"ratio_to_copy\":%.4f,\"gparams_per_s\":%.3f}",
                      prop.name, n, nchunks, zt::dtype_name(gdt), bpp, ms, tbs, copy_tbs, tbs / copy_tbs,
                      n / (ms * 1e-3) / 1e9);
        json.push_back(buf);
      }
      ZT_CUDA_CHECK(cudaFree(p));
      ZT_CUDA_CHECK(cudaFree(m));
      ZT_CUDA_CHECK(cudaFree(v));
      ZT_CUDA_CHECK(cudaFree(g));
      ZT_CUDA_CHECK(cudaFree(w));
    }
  }

  // ---- (b) cuBLASLt bf16 GEMM -------------------------------------------------------------
  {
    zt::cuda::LtContext lt;
    ZT_CUBLAS_CHECK(cublasLtCreate(&lt.handle));
    lt.workspace_bytes = 32u << 20;
    ZT_CUDA_CHECK(cudaMalloc(&lt.workspace, lt.workspace_bytes));
    struct Shape {
      const char* name;
      int m, n, k;
    };
    std::vector<Shape> shapes = {{"square 4096", 4096, 4096, 4096},
                                 {"square 8192", 8192, 8192, 8192},
                                 {"gpt2 fc 8192x768->3072", 3072, 8192, 768},
                                 {"gpt2 lm-head 8192x768->50257", 50257, 8192, 768}};
    if (quick) shapes.resize(1);
    for (const auto& sh : shapes) {
      void *A, *B, *D;
      ZT_CUDA_CHECK(cudaMalloc(&A, size_t(sh.m) * sh.k * 2));
      ZT_CUDA_CHECK(cudaMalloc(&B, size_t(sh.k) * sh.n * 2));
      ZT_CUDA_CHECK(cudaMalloc(&D, size_t(sh.m) * sh.n * 2));
      fill(A, size_t(sh.m) * sh.k * 2, s);
      fill(B, size_t(sh.k) * sh.n * 2, s);
      // The linear-layer form: D[m,n] = op_T(W[k,m]) · X[k,n] (as matmul_forward issues it).
      const double ms = median_ms(s, 5, quick ? 5 : 30, [&] {
        zt::cuda::gemm_bf16(lt, true, false, sh.m, sh.n, sh.k, 1.0f, A, sh.k, B, sh.k, 0.0f, D, sh.m, nullptr, s);
      });
      const double tf = 2.0 * sh.m * sh.n * double(sh.k) / (ms * 1e-3) / 1e12;
      rows.push_back({std::string("bf16 GEMM ") + sh.name, "TFLOP/s", tf, kH200PeakBf16TFlops, "peak 989"});
      std::snprintf(buf, sizeof buf,
                    "{\"bench\":\"gemm_bf16\",\"device\":\"%s\",\"shape\":\"%s\",\"m\":%d,\"n\":%d,\"k\":%d,"
                    "\"median_ms\":%.4f,\"tflops\":%.2f,\"ratio_to_peak\":%.4f,\"ratio_to_measured_780\":%.4f}",
                    prop.name, sh.name, sh.m, sh.n, sh.k, ms, tf, tf / kH200PeakBf16TFlops, tf / kMeasuredGemmTFlops);
      json.push_back(buf);
      ZT_CUDA_CHECK(cudaFree(A));
      ZT_CUDA_CHECK(cudaFree(B));
      ZT_CUDA_CHECK(cudaFree(D));
    }
    ZT_CUDA_CHECK(cudaFree(lt.workspace));
    ZT_CUBLAS_CHECK(cublasLtDestroy(lt.handle));
  }

  std::printf("\nGPU benchmarks on %s (%d SMs); AdamW moves %zu B/param with bf16 grads (read p,m,v 12 + grad 2;"
              " write p,m,v 12 + bf16 copy 2), %zu with fp32 grads\n",
              prop.name, prop.multiProcessorCount, zt::fused_adamw_bytes_per_param(zt::DType::BF16, true),
              zt::fused_adamw_bytes_per_param(zt::DType::F32, true));
  std::printf("%-40s %12s %-18s %10s %8s\n", "measurement", "value", "unit", "peer", "ratio");
  for (const auto& r : rows)
    std::printf("%-40s %12.2f %-18s %10s %8.3f\n", r.name.c_str(), r.value, r.unit.c_str(), r.peer_name.c_str(),
                r.value / r.peer);
  for (const auto& j : json) std::printf("%s\n", j.c_str());
  ZT_CUDA_CHECK(cudaStreamDestroy(s));
  return 0;
}
