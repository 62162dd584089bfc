// ProfilingBackend: a Backend decorator that forwards every call to the real backend and, while
// armed, records each op's kind, shape, FLOPs (op_flops.h) and latency — the flops profiler's eyes.
//
// Latency: while armed, each op is bracketed by synchronize() on the real backend (CPU: the copy
// lane drains, nearly free; CUDA: a device sync per op, which serialises the stream and removes the
// overlap with copies and NCCL for that one step — the price of per-op times without CUDA events).
// Disarmed, a call costs one extra virtual dispatch and a branch.
//
// Every virtual of kernels/backend.h must be forwarded here: a virtual with a default body that is
// not overridden would run the default (e.g. an unfused fallback) instead of the real backend's.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/op_flops.h"

namespace zt {

struct OpRecord {
  OpKind kind = OpKind::Zero;
  double flops = 0;
  int64_t params = 0;     // weight elements the op reads (matmul, layernorm); 0 otherwise
  double seconds = 0;
  std::string shape;      // "N=256 IC=128 OC=384"
};

class ProfilingBackend final : public Backend {
 public:
  explicit ProfilingBackend(Backend& inner) : in_(inner) {}
  Backend& inner() { return in_; }

  // Starts recording (clearing what was recorded) / stops. Records stay until the next arm().
  void arm();
  void disarm() { armed_ = false; }
  bool armed() const { return armed_; }
  const std::vector<OpRecord>& records() const { return records_; }

  std::string name() const override { return in_.name(); }
  DType act_dtype() const override { return in_.act_dtype(); }

  void* alloc(size_t bytes) override { return in_.alloc(bytes); }
  void free(void* p) override { in_.free(p); }
  void copy_to_device(void* dst, const void* host_src, size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void zero(void* p, size_t bytes) override;
  void f32_to_act(void* dst, const float* src_f32, size_t n) override;
  void act_to_f32(float* dst_f32, const void* src, size_t n) override;

  CopyTicket copy_to_host_async(void* host_dst, const void* src, size_t bytes) override {
    return in_.copy_to_host_async(host_dst, src, bytes);
  }
  CopyTicket copy_to_device_async(void* dst, const void* host_src, size_t bytes) override {
    return in_.copy_to_device_async(dst, host_src, bytes);
  }
  void wait_copy(CopyTicket t) override { in_.wait_copy(t); }

  void synchronize() override { in_.synchronize(); }
  void* native_stream() override { return in_.native_stream(); }

  void embedding_forward(void* out, const int32_t* tokens, const void* wte, const void* wpe, int B, int T,
                         int C) override;
  void embedding_backward(void* dwte, void* dwpe, const void* dout, const int32_t* tokens, int B, int T,
                          int C) override;
  void layernorm_forward(void* out, float* mean, float* rstd, const void* inp, const void* w, const void* b, int N,
                         int C) override;
  void layernorm_backward(void* dinp, void* dw, void* db, const void* dout, const void* inp, const void* w,
                          const float* mean, const float* rstd, int N, int C) override;
  void matmul_forward(void* out, const void* inp, const void* w, const void* bias, int N, int IC, int OC) override;
  void matmul_backward(void* dinp, void* dw, void* dbias, const void* dout, const void* inp, const void* w, int N,
                       int IC, int OC) override;
  size_t attention_saved_bytes(int B, int T, int C, int NH) const override {
    return in_.attention_saved_bytes(B, T, C, NH);
  }
  void attention_forward(void* out, void* saved, const void* qkv, int B, int T, int C, int NH) override;
  // Generation only (never inside a profiled step): forwarded without a record.
  void attention_decode(void* out, const void* qkv_cache, int B, int Tmax, int t, int C, int NH) override {
    in_.attention_decode(out, qkv_cache, B, Tmax, t, C, NH);
  }
  void attention_backward(void* dqkv, const void* dout, const void* qkv, const void* saved, int B, int T, int C,
                          int NH) override;
  void gelu_forward(void* out, const void* inp, size_t n) override;
  void gelu_backward(void* dinp, const void* inp, const void* dout, size_t n) override;
  void residual_forward(void* out, const void* a, const void* b, size_t n) override;
  void accumulate(void* acc, const void* x, size_t n) override;
  void crossentropy_forward_backward(float* losses, void* dlogits, const void* logits, const int32_t* targets, int N,
                                     int V, int Vp, float dloss) override;
  // Fused ops: timed as their main op (the GEMM or the LayerNorm); the FLOPs of the op fused into it
  // are recorded beside it with no time of its own, so totals and per-kind counts stay as unfused.
  void matmul_bias_gelu_forward(void* out, void* pre, const void* inp, const void* w, const void* bias, int N, int IC,
                                int OC) override;
  void matmul_backward_gelu(void* dpre, void* dw, void* dbias, const void* dout, const void* gelu_out, const void* pre,
                            const void* w, int N, int IC, int OC) override;
  void residual_layernorm_forward(void* resid, void* out, float* mean, float* rstd, const void* a, const void* b,
                                  const void* w, const void* bias, int N, int C) override;
  void lm_head_forward(void* logits, const void* inp, const void* w, int N, int C, int V, int Vp) override;
  void lm_head_backward(void* dinp, void* dw, const void* dlogits, const void* inp, const void* w, int N, int C, int V,
                        int Vp) override;
  void adamw_step(float* p, const float* g, float* m, float* v, size_t n, const AdamWHyper& h) override;
  double sum_squares(const void* x, size_t n, float scale) override;
  void scale(void* x, float s, size_t n) override;
  void adamw_multi_tensor(const AdamWChunk* chunks, size_t count, DType grad_dtype, const AdamWHyper& h) override;

 private:
  using Clock = std::chrono::steady_clock;
  // Runs `call` on the real backend; while armed, synchronised on both sides and recorded with the
  // FLOPs, parameters and shape that `describe` fills in (called only when armed).
  template <class Describe, class Call>
  void op(OpKind kind, Describe describe, Call call);
  // Records the FLOPs of an op fused into the previous one (no time of its own), while armed.
  void fused_part(OpKind kind, double flops, std::string shape);

  Backend& in_;
  bool armed_ = false;
  std::vector<OpRecord> records_;
};

}  // namespace zt
