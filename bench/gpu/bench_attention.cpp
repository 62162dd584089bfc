// Attention benchmark: the flash kernels' forward, backward and forward+backward TFLOP/s against a
// cuBLASLt bf16 GEMM of the same FLOP count timed in the same run (the ratio is the result; the
// goal is >= 0.5), and against the reference kernels (T x T probabilities). The flash output is
// checked against the reference on the benchmark's own random inputs before anything is timed.
//
// FLOPs are the usual convention for causal attention: forward 2 products of 2·T²·hs per head,
// halved by the mask (2·B·NH·T²·hs); backward 2.5 times that (5 products). The flash backward does
// 7 (dQ recomputes S and dP so that no atomics are needed): that work is not counted.
// Head size 128 runs at the FLOPs of the GPT-2 shape (half the heads): its backward's dK/dV kernel
// spills registers (docs/status.md), and each shape's line "backward kernels" shows registers and local
// memory (the spill's stack frame) per thread, so the times show what the spill costs.
//   usage: bench_attention [--quick]        (exit 77 without a GPU)
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench/gpu/gpu_timing.h"
#include "kernels/cuda/attention.cuh"
#include "base/cuda_check.h"
#include "kernels/cuda/flash_attention.cuh"
#include "kernels/cuda/matmul.cuh"

namespace {

struct Shape {
  const char* name;
  int B, T, C, NH;
};

// Random bf16 in [-2, 2) (never zeros: METHOD's advice), as raw bits.
std::vector<uint16_t> random_bf16_bits(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  std::vector<uint16_t> v(n);
  for (auto& x : v) {
    float f;
    do f = d(rng);
    while (f == 0.0f);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    x = uint16_t((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
  }
  return v;
}

float bf16_bits_to_float(uint16_t b) {
  const uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

void* device_copy(const std::vector<uint16_t>& h) {
  void* p;
  ZT_CUDA_CHECK(cudaMalloc(&p, h.size() * 2));
  ZT_CUDA_CHECK(cudaMemcpy(p, h.data(), h.size() * 2, cudaMemcpyHostToDevice));
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  int ndev = 0;
  const cudaError_t e = cudaGetDeviceCount(&ndev);
  if (e != cudaSuccess || ndev == 0) {
    std::printf("bench_attention: no usable GPU (%s): skipped\n", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return 77;
  }
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  cudaDeviceProp prop{};
  ZT_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  cudaStream_t s;
  ZT_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  zt::cuda::LtContext lt;
  ZT_CUBLAS_CHECK(cublasLtCreate(&lt.handle));
  lt.workspace_bytes = 32u << 20;
  ZT_CUDA_CHECK(cudaMalloc(&lt.workspace, lt.workspace_bytes));

  std::vector<Shape> shapes = {{"gpt2-124m B=16 T=1024", 16, 1024, 768, 12},
                               {"B=16 T=1024 hs=128", 16, 1024, 768, 6},
                               {"B=4 T=4096 hs=64", 4, 4096, 768, 12}};
  if (quick) shapes.resize(2);
  const int reps = quick ? 5 : 20;
  std::vector<std::string> json;
  std::printf("\nattention on %s (%d SMs); TFLOP/s by the causal convention (forward 2·B·NH·T²·hs, backward 2.5x)\n",
              prop.name, prop.multiProcessorCount);
  std::printf("%-24s %-18s %9s %9s %11s %8s\n", "shape", "measurement", "ms", "TFLOP/s", "peer", "ratio");
  for (const Shape& sh : shapes) {
    const int hs = sh.C / sh.NH;
    const size_t n_out = size_t(sh.B) * sh.T * sh.C;
    const double f_fwd = 2.0 * sh.B * sh.NH * double(sh.T) * sh.T * hs, f_bwd = 2.5 * f_fwd;
    void* qkv = device_copy(random_bf16_bits(3 * n_out, 1));
    void* dout = device_copy(random_bf16_bits(n_out, 2));
    void *out, *saved, *dqkv, *ref_out;
    float* dsum;
    ZT_CUDA_CHECK(cudaMalloc(&out, n_out * 2));
    ZT_CUDA_CHECK(cudaMalloc(&ref_out, n_out * 2));
    ZT_CUDA_CHECK(cudaMalloc(&dqkv, 3 * n_out * 2));
    ZT_CUDA_CHECK(cudaMalloc(&saved, zt::cuda::flash_attention_saved_bytes(sh.B, sh.T, sh.C, sh.NH)));
    ZT_CUDA_CHECK(cudaMalloc(&dsum, zt::cuda::flash_attention_backward_scratch_floats(sh.B, sh.T, sh.NH) * 4));

    // The flash output against the reference kernels on these inputs (relative L2 error).
    const size_t probs_bytes = zt::cuda::naive_attention_saved_bytes(sh.B, sh.T, sh.C, sh.NH);
    float *probs = nullptr, *scratch = nullptr;
    ZT_CUDA_CHECK(cudaMalloc(&probs, probs_bytes));
    ZT_CUDA_CHECK(cudaMalloc(&scratch, zt::cuda::naive_attention_backward_scratch_floats(sh.B, sh.T, sh.NH) * 4));
    zt::cuda::flash_attention_forward(out, saved, qkv, sh.B, sh.T, sh.C, sh.NH, sh.NH, s);
    zt::cuda::naive_attention_forward(ref_out, probs, qkv, sh.B, sh.T, sh.C, sh.NH, sh.NH, s);
    ZT_CUDA_CHECK(cudaStreamSynchronize(s));
    std::vector<uint16_t> a(n_out), b(n_out);
    ZT_CUDA_CHECK(cudaMemcpy(a.data(), out, n_out * 2, cudaMemcpyDeviceToHost));
    ZT_CUDA_CHECK(cudaMemcpy(b.data(), ref_out, n_out * 2, cudaMemcpyDeviceToHost));
    double num = 0, den = 0;
    for (size_t i = 0; i < n_out; ++i) {
      const double x = bf16_bits_to_float(a[i]), y = bf16_bits_to_float(b[i]);
      num += (x - y) * (x - y);
      den += y * y;
    }
    const double rel_err = std::sqrt(num / den);

    const double t_fwd = zt::bench::median_ms(s, 3, reps, [&] {
      zt::cuda::flash_attention_forward(out, saved, qkv, sh.B, sh.T, sh.C, sh.NH, sh.NH, s);
    });
    // Backward as the model runs it: the gradient buffer zeroed, then accumulated into.
    const double t_bwd = zt::bench::median_ms(s, 3, reps, [&] {
      ZT_CUDA_CHECK(cudaMemsetAsync(dqkv, 0, 3 * n_out * 2, s));
      zt::cuda::flash_attention_backward(dqkv, dout, qkv, saved, sh.B, sh.T, sh.C, sh.NH, sh.NH, dsum, s);
    });
    const double t_ref = zt::bench::median_ms(s, 1, quick ? 3 : 5, [&] {
      zt::cuda::naive_attention_forward(ref_out, probs, qkv, sh.B, sh.T, sh.C, sh.NH, sh.NH, s);
      ZT_CUDA_CHECK(cudaMemsetAsync(dqkv, 0, 3 * n_out * 2, s));
      zt::cuda::naive_attention_backward(dqkv, dout, qkv, probs, sh.B, sh.T, sh.C, sh.NH, sh.NH, scratch, s);
    });
    ZT_CUDA_CHECK(cudaFree(probs));
    ZT_CUDA_CHECK(cudaFree(scratch));

    // A square bf16 GEMM with (about) the forward+backward FLOP count: 2·n³ = f_fwd + f_bwd.
    int n = int(std::cbrt((f_fwd + f_bwd) / 2.0) / 128.0 + 0.5) * 128;
    if (n < 128) n = 128;
    const double f_gemm = 2.0 * n * double(n) * n;
    void *A, *Bm, *D;
    ZT_CUDA_CHECK(cudaMalloc(&A, size_t(n) * n * 2));
    ZT_CUDA_CHECK(cudaMalloc(&Bm, size_t(n) * n * 2));
    ZT_CUDA_CHECK(cudaMalloc(&D, size_t(n) * n * 2));
    {
      const auto r = random_bf16_bits(size_t(n) * n, 3);
      ZT_CUDA_CHECK(cudaMemcpy(A, r.data(), r.size() * 2, cudaMemcpyHostToDevice));
      ZT_CUDA_CHECK(cudaMemcpy(Bm, r.data(), r.size() * 2, cudaMemcpyHostToDevice));
    }
    const double t_gemm = zt::bench::median_ms(s, 3, reps, [&] {
      zt::cuda::gemm_bf16(lt, true, false, n, n, n, 1.0f, A, n, Bm, n, 0.0f, D, n, nullptr, s);
    });
    ZT_CUDA_CHECK(cudaFree(A));
    ZT_CUDA_CHECK(cudaFree(Bm));
    ZT_CUDA_CHECK(cudaFree(D));

    const double tf_fwd = f_fwd / (t_fwd * 1e-3) / 1e12, tf_bwd = f_bwd / (t_bwd * 1e-3) / 1e12;
    const double tf_all = (f_fwd + f_bwd) / ((t_fwd + t_bwd) * 1e-3) / 1e12;
    const double tf_gemm = f_gemm / (t_gemm * 1e-3) / 1e12, tf_ref = (f_fwd + f_bwd) / (t_ref * 1e-3) / 1e12;
    std::printf("%-24s %-18s %9.3f %9.1f %11s %8.3f\n", sh.name, "flash fwd", t_fwd, tf_fwd, "GEMM", tf_fwd / tf_gemm);
    std::printf("%-24s %-18s %9.3f %9.1f %11s %8.3f\n", sh.name, "flash bwd", t_bwd, tf_bwd, "GEMM", tf_bwd / tf_gemm);
    std::printf("%-24s %-18s %9.3f %9.1f %11s %8.3f\n", sh.name, "flash fwd+bwd", t_fwd + t_bwd, tf_all, "GEMM",
                tf_all / tf_gemm);
    std::printf("%-24s %-18s %9.3f %9.1f %11s %8.3f\n", sh.name, "reference fwd+bwd", t_ref, tf_ref, "flash",
                tf_ref / tf_all);
    std::printf("%-24s %-18s %9.3f %9.1f %11s %8s\n", sh.name, ("GEMM " + std::to_string(n) + "^3").c_str(), t_gemm,
                tf_gemm, "", "");
    std::printf("%-24s flash out vs reference: relative L2 error %.2e\n", sh.name, rel_err);
    const zt::cuda::FlashBackwardKernelInfo ki = zt::cuda::flash_attention_backward_kernel_info(hs);
    std::printf("%-24s backward kernels (hs=%d): dK/dV %d registers + %zu B local, dQ %d registers + %zu B local "
                "per thread (local > 0: spill)\n",
                sh.name, hs, ki.dkdv_registers, ki.dkdv_local_bytes, ki.dq_registers, ki.dq_local_bytes);
    char buf[1024];
    std::snprintf(buf, sizeof buf,
                  "{\"bench\":\"attention\",\"device\":\"%s\",\"shape\":\"%s\",\"B\":%d,\"T\":%d,\"C\":%d,\"NH\":%d,"
                  "\"fwd_ms\":%.4f,\"bwd_ms\":%.4f,\"fwd_tflops\":%.2f,\"bwd_tflops\":%.2f,\"fwd_bwd_tflops\":%.2f,"
                  "\"gemm_n\":%d,\"gemm_ms\":%.4f,\"gemm_tflops\":%.2f,\"ratio_to_gemm\":%.4f,"
                  "\"reference_ms\":%.4f,\"speedup_vs_reference\":%.3f,\"out_rel_err_vs_reference\":%.3e,"
                  "\"hs\":%d,\"dkdv_registers\":%d,\"dkdv_local_bytes\":%zu,\"dq_registers\":%d,\"dq_local_bytes\":%zu}",
                  prop.name, sh.name, sh.B, sh.T, sh.C, sh.NH, t_fwd, t_bwd, tf_fwd, tf_bwd, tf_all, n, t_gemm, tf_gemm,
                  tf_all / tf_gemm, t_ref, t_ref / (t_fwd + t_bwd), rel_err, hs, ki.dkdv_registers, ki.dkdv_local_bytes,
                  ki.dq_registers, ki.dq_local_bytes);
    json.push_back(buf);
    for (void* p : {qkv, dout, out, ref_out, dqkv, saved}) ZT_CUDA_CHECK(cudaFree(p));
    ZT_CUDA_CHECK(cudaFree(dsum));
  }
  for (const auto& j : json) std::printf("%s\n", j.c_str());
  ZT_CUDA_CHECK(cudaFree(lt.workspace));
  ZT_CUBLAS_CHECK(cublasLtDestroy(lt.handle));
  ZT_CUDA_CHECK(cudaStreamDestroy(s));
  return 0;
}
