// GPT-2 forward+backward tokens/s on the CUDA backend (default gpt2-124m, B=8, T=1024), with the
// model FLOP utilisation (6·Ψ·tokens + attention) against the H200 dense bf16 peak as the peer.
// CUDA events on the backend's stream, warm-up, median of several runs; table + JSON line.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "base/cuda_check.h"
#include "runtime/model/gpt2.h"
#include "runtime/model/init.h"

int main(int argc, char** argv) {
  const std::string preset = argc > 1 ? argv[1] : "gpt2-124m";
  const int B = argc > 2 ? std::atoi(argv[2]) : 8;
  std::unique_ptr<zt::Backend> be;
  try {
    be = zt::make_cuda_backend(0);
  } catch (const std::exception& e) {
    std::printf("bench_gpu_model: %s: skipped\n", e.what());
    return 77;
  }
  auto cfg = zt::model_preset(preset);
  if (!cfg) {
    std::fprintf(stderr, "bench_gpu_model: unknown preset %s\n", preset.c_str());
    return 2;
  }
  const int T = cfg->seq_len;
  zt::ModelRunOptions opt;
  opt.max_batch = B;
  zt::GPT2 model(*cfg, *be, opt);
  const int U = model.num_units();
  std::vector<void*> params(U), grads(U);
  int64_t n_params = 0;
  for (int u = 0; u < U; ++u) {
    const auto& L = model.layout(u);
    n_params += L.numel;
    std::vector<float> host(L.numel);
    zt::init_unit_params(L, 1234, 0, L.numel, host.data());
    params[u] = be->alloc(L.numel * 2);
    grads[u] = be->alloc(L.numel * 2);
    be->f32_to_act(params[u], host.data(), L.numel);
  }
  std::mt19937 rng(1);
  std::vector<int32_t> tok(size_t(B) * T), tgt(size_t(B) * T);
  for (auto& t : tok) t = int32_t(rng() % cfg->vocab);
  for (size_t i = 0; i < tok.size(); ++i) tgt[i] = tok[(i + 1) % tok.size()];
  auto step = [&] {
    for (int u = 0; u < U; ++u) be->zero(grads[u], model.layout(u).numel * 2);
    model.set_batch(tok.data(), tgt.data(), B, T);
    for (int u = 0; u < U; ++u) model.forward_unit(u, params[u], model.needs_embedding_unit(u) ? params[0] : nullptr);
    for (int u = U - 1; u >= 0; --u)
      model.backward_unit(u, params[u], grads[u], model.needs_embedding_unit(u) ? params[0] : nullptr,
                          model.needs_embedding_unit(u) ? grads[0] : nullptr);
  };
  auto s = static_cast<cudaStream_t>(be->native_stream());
  cudaEvent_t a, b;
  ZT_CUDA_CHECK(cudaEventCreate(&a));
  ZT_CUDA_CHECK(cudaEventCreate(&b));
  step();
  const float first_loss = model.loss();
  step();
  std::vector<float> ms(5);
  for (auto& m : ms) {
    be->synchronize();
    ZT_CUDA_CHECK(cudaEventRecord(a, s));
    step();
    ZT_CUDA_CHECK(cudaEventRecord(b, s));
    ZT_CUDA_CHECK(cudaEventSynchronize(b));
    ZT_CUDA_CHECK(cudaEventElapsedTime(&m, a, b));
  }
  std::sort(ms.begin(), ms.end());
  const double med = ms[ms.size() / 2];
  const double tokens = double(B) * T;
  const double flops = 6.0 * n_params * tokens + 12.0 * cfg->layers * cfg->dim * double(T) * tokens / 2;
  const double tflops = flops / (med * 1e-3) / 1e12;
  std::printf("\n%-28s %12s %12s %12s %10s\n", "model fwd+bwd (cuda)", "tokens/s", "ms/step", "TFLOP/s", "MFU/989");
  std::printf("%-28s %12.0f %12.2f %12.1f %10.3f   (first loss %.3f, ln V = %.3f)\n", preset.c_str(),
              tokens / (med * 1e-3), med, tflops, tflops / 989.0, first_loss, std::log(double(cfg->vocab)));
  std::printf("{\"bench\":\"model_fwd_bwd\",\"backend\":\"cuda\",\"model\":\"%s\",\"params\":%lld,\"B\":%d,\"T\":%d,"
              "\"median_ms\":%.3f,\"tokens_per_s\":%.1f,\"tflops\":%.2f,\"mfu_vs_989\":%.4f,\"first_loss\":%.4f}\n",
              preset.c_str(), (long long)n_params, B, T, med, tokens / (med * 1e-3), tflops, tflops / 989.0,
              first_loss);
  for (int u = 0; u < U; ++u) {
    be->free(params[u]);
    be->free(grads[u]);
  }
  return 0;
}
