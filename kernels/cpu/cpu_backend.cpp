// The CPU Backend: host memory, a no-op stream, and the fp32 ops of kernels/cpu (OpenMP + OpenBLAS).
// Also the thread control of cpu_threads.h.
#include <cblas.h>
#include <omp.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <new>

#include "base/fixed_order_sum.h"
#include "base/host_pages.h"
#include "kernels/backend.h"
#include "kernels/op_record.h"
#include "kernels/cpu/copy_lane.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/simd.h"
#include "kernels/cpu/cpu_threads.h"

namespace zt {

void set_cpu_threads(int n) {
  if (n <= 0) n = omp_get_num_procs();
  omp_set_num_threads(n);
  // GEMMs are parallelised by matmul.cpp over fixed row chunks; OpenBLAS itself stays at 1 thread.
  openblas_set_num_threads(1);
}

int cpu_threads() { return omp_get_max_threads(); }

namespace {

inline float* F(void* p) { return static_cast<float*>(p); }
inline const float* F(const void* p) { return static_cast<const float*>(p); }

class CpuBackend final : public Backend {
 public:
  // OpenBLAS's own threading changes results with the thread count (matmul.cpp): keep it at one
  // thread and let matmul.cpp spread fixed row chunks over OpenMP threads instead.
  // The SIMD level is resolved here, on the constructing thread: the kernels first ask for it
  // inside parallel loops, where a refused ZT_SIMD could not propagate.
  CpuBackend() {
    openblas_set_num_threads(1);
    cpu::simd_level();
  }

  std::string name() const override { return "cpu"; }
  DType act_dtype() const override { return DType::F32; }

  void* alloc(size_t bytes) override {
    // Cache lines for SIMD; whole pages for large buffers (the parameter and state arrays), on huge
    // pages from 2 MiB (base/host_pages.h), so a checkpoint's O_DIRECT load lands in them in place
    // where the tensor's file offset is on the page grid too (a shard file aligns its data area to
    // a page; its tensors follow back to back) in requests as large as the device takes.
    if (bytes >= (size_t(1) << 20)) return alloc_host_pages(bytes);
    const size_t rounded = (bytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
    if (!p) throw std::bad_alloc();
    return p;
  }
  void free(void* p) override { std::free(p); }
  void copy_to_device(void* dst, const void* src, size_t bytes) override {
    const RecordedOp rec(*this, op_cost::copy_to_device, bytes);
    lane_.drain();
    std::memcpy(dst, src, bytes);
  }
  void copy_to_host(void* dst, const void* src, size_t bytes) override {
    const RecordedOp rec(*this, op_cost::copy_to_host, bytes);
    lane_.drain();
    std::memcpy(dst, src, bytes);
  }
  void copy(void* dst, const void* src, size_t bytes) override {
    const RecordedOp rec(*this, op_cost::copy, bytes);
    std::memmove(dst, src, bytes);
  }
  void zero(void* p, size_t bytes) override {
    const RecordedOp rec(*this, op_cost::zero, bytes);
    std::memset(p, 0, bytes);
  }
  void f32_to_act(void* dst, const float* src, size_t n) override {
    const RecordedOp rec(*this, op_cost::f32_to_act, n);
    std::memmove(dst, src, n * sizeof(float));
  }
  void act_to_f32(float* dst, const void* src, size_t n) override {
    const RecordedOp rec(*this, op_cost::act_to_f32, n);
    std::memmove(dst, src, n * sizeof(float));
  }
  // Asynchronous copies run on the copy lane's thread; synchronous ones first wait for it, so that
  // every copy sees the ones issued before it.
  CopyTicket copy_to_host_async(void* dst, const void* src, size_t bytes) override {
    return lane_.submit(dst, src, bytes);
  }
  CopyTicket copy_to_device_async(void* dst, const void* src, size_t bytes) override {
    return lane_.submit(dst, src, bytes);
  }
  void wait_copy(CopyTicket t) override { lane_.wait(t); }
  void synchronize() override { lane_.drain(); }

  void embedding_forward(void* out, const int32_t* tokens, const void* wte, const void* wpe, int B, int T,
                         int C) override {
    const RecordedOp rec(*this, op_cost::embedding_forward, B, T, C);
    cpu::embedding_forward(F(out), tokens, F(wte), F(wpe), B, T, C);
  }
  void embedding_backward(void* dwte, void* dwpe, const void* dout, const int32_t* tokens, int B, int T,
                          int C) override {
    const RecordedOp rec(*this, op_cost::embedding_backward, B, T, C);
    cpu::embedding_backward(F(dwte), F(dwpe), F(dout), tokens, B, T, C);
  }
  void layernorm_forward(void* out, float* mean, float* rstd, const void* inp, const void* w, const void* b,
                         int N, int C) override {
    const RecordedOp rec(*this, op_cost::layernorm_forward, N, C);
    cpu::layernorm_forward(F(out), mean, rstd, F(inp), F(w), F(b), N, C);
  }
  void layernorm_backward(void* dinp, void* dw, void* db, const void* dout, const void* inp, const void* w,
                          const float* mean, const float* rstd, int N, int C) override {
    const RecordedOp rec(*this, op_cost::layernorm_backward, N, C);
    cpu::layernorm_backward(F(dinp), F(dw), F(db), F(dout), F(inp), F(w), mean, rstd, N, C);
  }
  void matmul_forward(void* out, const void* inp, const void* w, const void* bias, int N, int IC,
                      int OC) override {
    const RecordedOp rec(*this, op_cost::matmul_forward, N, IC, OC, bias != nullptr);
    cpu::matmul_forward(F(out), F(inp), F(w), F(bias), N, IC, OC);
  }
  void matmul_backward(void* dinp, void* dw, void* dbias, const void* dout, const void* inp, const void* w,
                       int N, int IC, int OC) override {
    const RecordedOp rec(*this, op_cost::matmul_backward, N, IC, OC, dinp != nullptr, dw != nullptr, dbias != nullptr);
    cpu::matmul_backward(F(dinp), F(dw), F(dbias), F(dout), F(inp), F(w), N, IC, OC);
  }
  size_t attention_saved_bytes(int B, int T, int C, int NH) const override {
    return cpu::attention_saved_bytes(B, T, C, NH);
  }
  using Backend::attention_forward;
  using Backend::attention_backward;
  using Backend::attention_decode;
  void attention_forward(void* out, void* saved, const void* qkv, int B, int T, int C, int NH, int NKV) override {
    const RecordedOp rec(*this, op_cost::attention_forward, B, T, C, NH, NKV);
    cpu::attention_forward(F(out), F(saved), F(qkv), B, T, C, NH, NKV);
  }
  void attention_backward(void* dqkv, const void* dout, const void* qkv, const void* saved, int B, int T, int C,
                          int NH, int NKV) override {
    const RecordedOp rec(*this, op_cost::attention_backward, B, T, C, NH, NKV);
    cpu::attention_backward(F(dqkv), F(dout), F(qkv), F(saved), B, T, C, NH, NKV);
  }
  void attention_decode(void* out, const void* qkv_cache, int B, int Tmax, int t, int C, int NH,
                        int NKV) override {
    cpu::attention_decode(F(out), F(qkv_cache), B, Tmax, t, C, NH, NKV);
  }
  void gelu_forward(void* out, const void* inp, size_t n) override {
    const RecordedOp rec(*this, op_cost::gelu_forward, n);
    cpu::gelu_forward(F(out), F(inp), n);
  }
  void gelu_backward(void* dinp, const void* inp, const void* dout, size_t n) override {
    const RecordedOp rec(*this, op_cost::gelu_backward, n);
    cpu::gelu_backward(F(dinp), F(inp), F(dout), n);
  }
  void rmsnorm_forward(void* out, float* rstd, const void* inp, const void* w, int N, int C, float eps) override {
    const RecordedOp rec(*this, op_cost::rmsnorm_forward, N, C);
    cpu::rmsnorm_forward(F(out), rstd, F(inp), F(w), N, C, eps);
  }
  void rmsnorm_backward(void* dinp, void* dw, const void* dout, const void* inp, const void* w, const float* rstd,
                        int N, int C) override {
    const RecordedOp rec(*this, op_cost::rmsnorm_backward, N, C);
    cpu::rmsnorm_backward(F(dinp), F(dw), F(dout), F(inp), F(w), rstd, N, C);
  }
  void rope_forward(void* x, const float* cos, const float* sin, int B, int T, int heads, int hd,
                    int row_stride) override {
    const RecordedOp rec(*this, op_cost::rope_forward, B, T, heads, hd);
    cpu::rope_forward(F(x), cos, sin, B, T, heads, hd, row_stride);
  }
  void rope_backward(void* dx, const float* cos, const float* sin, int B, int T, int heads, int hd,
                     int row_stride) override {
    const RecordedOp rec(*this, op_cost::rope_backward, B, T, heads, hd);
    cpu::rope_backward(F(dx), cos, sin, B, T, heads, hd, row_stride);
  }
  void swiglu_forward(void* out, const void* gate_up, int N, int F_) override {
    const RecordedOp rec(*this, op_cost::swiglu_forward, N, F_);
    cpu::swiglu_forward(F(out), F(gate_up), N, F_);
  }
  void swiglu_backward(void* dgate_up, const void* dout, const void* gate_up, int N, int F_) override {
    const RecordedOp rec(*this, op_cost::swiglu_backward, N, F_);
    cpu::swiglu_backward(F(dgate_up), F(dout), F(gate_up), N, F_);
  }
  void residual_forward(void* out, const void* a, const void* b, size_t n) override {
    const RecordedOp rec(*this, op_cost::residual_forward, n);
    float* o = F(out);
    const float* x = F(a);
    const float* y = F(b);
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; ++i) o[i] = x[i] + y[i];
  }
  void accumulate(void* acc, const void* x, size_t n) override {
    const RecordedOp rec(*this, op_cost::accumulate, n);
    float* o = F(acc);
    const float* y = F(x);
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; ++i) o[i] += y[i];
  }
  void crossentropy_forward_backward(float* losses, void* dlogits, const void* logits, const int32_t* targets,
                                     int N, int V, int Vp, float dloss) override {
    const RecordedOp rec(*this, op_cost::crossentropy_forward_backward, N, V, Vp);
    cpu::crossentropy_forward_backward(losses, F(dlogits), F(logits), targets, N, V, Vp, dloss);
  }
  void adamw_step(float* p, const float* g, float* m, float* v, size_t n, const AdamWHyper& h) override {
    const RecordedOp rec(*this, op_cost::adamw_step, n);
    cpu::adamw_step(p, g, m, v, n, h);
  }
  double sum_squares(const void* x, size_t n, float scale) override {
    const RecordedOp rec(*this, op_cost::sum_squares, n);
    return sum_squares_fixed(F(x), n, scale);
  }
  void scale(void* x, float s, size_t n) override {
    const RecordedOp rec(*this, op_cost::scale, n);
    float* o = F(x);
    const long long nn = static_cast<long long>(n);
#pragma omp parallel for simd schedule(static) if (nn > (1 << 16))
    for (long long i = 0; i < nn; ++i) o[i] = o[i] * s;
  }
  void adamw_multi_tensor(const AdamWChunk* chunks, size_t count, DType grad_dtype, const AdamWHyper& h) override {
    const RecordedOp rec(*this, op_cost::adamw_multi_tensor, chunks, count);
    if (grad_dtype != DType::F32)
      throw std::invalid_argument(std::string("cpu backend: adamw_multi_tensor takes fp32 gradients, got ") +
                                  dtype_name(grad_dtype));
    for (size_t c = 0; c < count; ++c) {
      const AdamWChunk& ch = chunks[c];
      cpu::adamw_step(ch.master, static_cast<const float*>(ch.grad), ch.m, ch.v, ch.n, h);
      if (ch.working && ch.working != ch.master) std::memcpy(ch.working, ch.master, ch.n * sizeof(float));
    }
  }

  // --- fused ops ---
  void matmul_bias_gelu_forward(void* out, void* pre, const void* inp, const void* w, const void* bias, int N,
                                int IC, int OC) override {
    const RecordedOp rec(*this, op_cost::matmul_bias_gelu_forward, N, IC, OC, bias != nullptr);
    cpu::matmul_bias_gelu_forward(F(out), F(pre), F(inp), F(w), F(bias), N, IC, OC);
  }
  void matmul_backward_gelu(void* dpre, void* dw, void* dbias, const void* dout, const void* gelu_out,
                            const void* pre, const void* w, int N, int IC, int OC) override {
    const RecordedOp rec(*this, op_cost::matmul_backward_gelu, N, IC, OC, dw != nullptr, dbias != nullptr);
    cpu::matmul_backward_gelu(F(dpre), F(dw), F(dbias), F(dout), F(gelu_out), F(pre), F(w), N, IC, OC);
  }
  void residual_layernorm_forward(void* resid, void* out, float* mean, float* rstd, const void* a, const void* b,
                                  const void* w, const void* bias, int N, int C) override {
    const RecordedOp rec(*this, op_cost::residual_layernorm_forward, N, C);
    cpu::residual_layernorm_forward(F(resid), F(out), mean, rstd, F(a), F(b), F(w), F(bias), N, C);
  }
  void residual_rmsnorm_forward(void* resid, void* out, float* rstd, const void* a, const void* b, const void* w,
                                int N, int C, float eps) override {
    const RecordedOp rec(*this, op_cost::residual_rmsnorm_forward, N, C);
    cpu::residual_rmsnorm_forward(F(resid), F(out), rstd, F(a), F(b), F(w), N, C, eps);
  }
  void lm_head_forward(void* logits, const void* inp, const void* w, int N, int C, int V, int Vp) override {
    const RecordedOp rec(*this, op_cost::lm_head_forward, N, C, V, Vp);
    cpu::lm_head_forward(F(logits), F(inp), F(w), N, C, V, Vp);
  }
  void lm_head_backward(void* dinp, void* dw, const void* dlogits, const void* inp, const void* w, int N, int C,
                        int V, int Vp) override {
    const RecordedOp rec(*this, op_cost::lm_head_backward, N, C, V, Vp, dinp != nullptr, dw != nullptr);
    cpu::lm_head_backward(F(dinp), F(dw), F(dlogits), F(inp), F(w), N, C, V, Vp);
  }

 private:
  cpu::CopyLane lane_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace zt
