// ProfilingBackend: each op forwarded to the real backend; while armed, timed between two
// synchronize() calls and recorded with the FLOPs and shape of its arguments.
#include "runtime/monitor/profiling_backend.h"

namespace zt {

namespace {
std::string dims(std::initializer_list<std::pair<const char*, int64_t>> d) {
  std::string s;
  for (const auto& [k, v] : d) {
    if (!s.empty()) s += ' ';
    s += k;
    s += '=';
    s += std::to_string(v);
  }
  return s;
}
}  // namespace

void ProfilingBackend::arm() {
  records_.clear();
  armed_ = true;
}

template <class Describe, class Call>
void ProfilingBackend::op(OpKind kind, Describe describe, Call call) {
  if (!armed_) {
    call();
    return;
  }
  OpRecord r;
  r.kind = kind;
  describe(r);
  in_.synchronize();
  const auto t0 = Clock::now();
  call();
  in_.synchronize();
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  records_.push_back(std::move(r));
}

void ProfilingBackend::copy_to_device(void* dst, const void* host_src, size_t bytes) {
  op(OpKind::CopyToDevice, [&](OpRecord& r) { r.shape = dims({{"bytes", int64_t(bytes)}}); },
     [&] { in_.copy_to_device(dst, host_src, bytes); });
}
void ProfilingBackend::copy_to_host(void* host_dst, const void* src, size_t bytes) {
  op(OpKind::CopyToHost, [&](OpRecord& r) { r.shape = dims({{"bytes", int64_t(bytes)}}); },
     [&] { in_.copy_to_host(host_dst, src, bytes); });
}
void ProfilingBackend::copy(void* dst, const void* src, size_t bytes) {
  op(OpKind::Copy, [&](OpRecord& r) { r.shape = dims({{"bytes", int64_t(bytes)}}); }, [&] { in_.copy(dst, src, bytes); });
}
void ProfilingBackend::zero(void* p, size_t bytes) {
  op(OpKind::Zero, [&](OpRecord& r) { r.shape = dims({{"bytes", int64_t(bytes)}}); }, [&] { in_.zero(p, bytes); });
}
void ProfilingBackend::f32_to_act(void* dst, const float* src_f32, size_t n) {
  op(OpKind::F32ToAct, [&](OpRecord& r) { r.shape = dims({{"n", int64_t(n)}}); }, [&] { in_.f32_to_act(dst, src_f32, n); });
}
void ProfilingBackend::act_to_f32(float* dst_f32, const void* src, size_t n) {
  op(OpKind::ActToF32, [&](OpRecord& r) { r.shape = dims({{"n", int64_t(n)}}); }, [&] { in_.act_to_f32(dst_f32, src, n); });
}

void ProfilingBackend::embedding_forward(void* out, const int32_t* tokens, const void* wte, const void* wpe, int B,
                                         int T, int C) {
  op(
      OpKind::EmbeddingForward,
      [&](OpRecord& r) {
        r.flops = double(B) * T * C;
        r.shape = dims({{"B", B}, {"T", T}, {"C", C}});
      },
      [&] { in_.embedding_forward(out, tokens, wte, wpe, B, T, C); });
}
void ProfilingBackend::embedding_backward(void* dwte, void* dwpe, const void* dout, const int32_t* tokens, int B, int T,
                                          int C) {
  op(
      OpKind::EmbeddingBackward,
      [&](OpRecord& r) {
        r.flops = 2.0 * B * T * C;
        r.shape = dims({{"B", B}, {"T", T}, {"C", C}});
      },
      [&] { in_.embedding_backward(dwte, dwpe, dout, tokens, B, T, C); });
}
void ProfilingBackend::layernorm_forward(void* out, float* mean, float* rstd, const void* inp, const void* w,
                                         const void* b, int N, int C) {
  op(
      OpKind::LayerNormForward,
      [&](OpRecord& r) {
        r.flops = layernorm_forward_flops(N, C);
        r.params = 2 * int64_t(C);
        r.shape = dims({{"N", N}, {"C", C}});
      },
      [&] { in_.layernorm_forward(out, mean, rstd, inp, w, b, N, C); });
}
void ProfilingBackend::layernorm_backward(void* dinp, void* dw, void* db, const void* dout, const void* inp,
                                          const void* w, const float* mean, const float* rstd, int N, int C) {
  op(
      OpKind::LayerNormBackward,
      [&](OpRecord& r) {
        r.flops = layernorm_backward_flops(N, C);
        r.params = 2 * int64_t(C);
        r.shape = dims({{"N", N}, {"C", C}});
      },
      [&] { in_.layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, C); });
}
void ProfilingBackend::matmul_forward(void* out, const void* inp, const void* w, const void* bias, int N, int IC,
                                      int OC) {
  op(
      OpKind::MatmulForward,
      [&](OpRecord& r) {
        r.flops = matmul_forward_flops(N, IC, OC, bias != nullptr);
        r.params = int64_t(IC) * OC + (bias ? OC : 0);
        r.shape = dims({{"N", N}, {"IC", IC}, {"OC", OC}});
      },
      [&] { in_.matmul_forward(out, inp, w, bias, N, IC, OC); });
}
void ProfilingBackend::matmul_backward(void* dinp, void* dw, void* dbias, const void* dout, const void* inp,
                                       const void* w, int N, int IC, int OC) {
  op(
      OpKind::MatmulBackward,
      [&](OpRecord& r) {
        r.flops = matmul_backward_flops(N, IC, OC, dinp != nullptr, dw != nullptr, dbias != nullptr);
        r.params = int64_t(IC) * OC + (dbias ? OC : 0);
        r.shape = dims({{"N", N}, {"IC", IC}, {"OC", OC}});
      },
      [&] { in_.matmul_backward(dinp, dw, dbias, dout, inp, w, N, IC, OC); });
}
void ProfilingBackend::attention_forward(void* out, void* saved, const void* qkv, int B, int T, int C, int NH) {
  op(
      OpKind::AttentionForward,
      [&](OpRecord& r) {
        r.flops = attention_forward_flops(B, T, C);
        r.shape = dims({{"B", B}, {"T", T}, {"C", C}, {"NH", NH}});
      },
      [&] { in_.attention_forward(out, saved, qkv, B, T, C, NH); });
}
void ProfilingBackend::attention_backward(void* dqkv, const void* dout, const void* qkv, const void* saved, int B,
                                          int T, int C, int NH) {
  op(
      OpKind::AttentionBackward,
      [&](OpRecord& r) {
        r.flops = attention_backward_flops(B, T, C);
        r.shape = dims({{"B", B}, {"T", T}, {"C", C}, {"NH", NH}});
      },
      [&] { in_.attention_backward(dqkv, dout, qkv, saved, B, T, C, NH); });
}
void ProfilingBackend::gelu_forward(void* out, const void* inp, size_t n) {
  op(
      OpKind::GeluForward,
      [&](OpRecord& r) {
        r.flops = double(n);
        r.shape = dims({{"n", int64_t(n)}});
      },
      [&] { in_.gelu_forward(out, inp, n); });
}
void ProfilingBackend::gelu_backward(void* dinp, const void* inp, const void* dout, size_t n) {
  op(
      OpKind::GeluBackward,
      [&](OpRecord& r) {
        r.flops = 2.0 * double(n);
        r.shape = dims({{"n", int64_t(n)}});
      },
      [&] { in_.gelu_backward(dinp, inp, dout, n); });
}
void ProfilingBackend::residual_forward(void* out, const void* a, const void* b, size_t n) {
  op(
      OpKind::ResidualForward,
      [&](OpRecord& r) {
        r.flops = double(n);
        r.shape = dims({{"n", int64_t(n)}});
      },
      [&] { in_.residual_forward(out, a, b, n); });
}
void ProfilingBackend::accumulate(void* acc, const void* x, size_t n) {
  op(
      OpKind::Accumulate,
      [&](OpRecord& r) {
        r.flops = double(n);
        r.shape = dims({{"n", int64_t(n)}});
      },
      [&] { in_.accumulate(acc, x, n); });
}
void ProfilingBackend::crossentropy_forward_backward(float* losses, void* dlogits, const void* logits,
                                                     const int32_t* targets, int N, int V, int Vp, float dloss) {
  op(
      OpKind::CrossEntropy,
      [&](OpRecord& r) {
        r.flops = 2.0 * double(N) * V;
        r.shape = dims({{"N", N}, {"V", V}, {"Vp", Vp}});
      },
      [&] { in_.crossentropy_forward_backward(losses, dlogits, logits, targets, N, V, Vp, dloss); });
}
void ProfilingBackend::fused_part(OpKind kind, double flops, std::string shape) {
  if (!armed_) return;
  OpRecord r;
  r.kind = kind;
  r.flops = flops;
  r.shape = std::move(shape);
  records_.push_back(std::move(r));
}
void ProfilingBackend::matmul_bias_gelu_forward(void* out, void* pre, const void* inp, const void* w,
                                                const void* bias, int N, int IC, int OC) {
  op(
      OpKind::MatmulForward,
      [&](OpRecord& r) {
        r.flops = matmul_forward_flops(N, IC, OC, bias != nullptr);
        r.params = int64_t(IC) * OC + (bias ? OC : 0);
        r.shape = dims({{"N", N}, {"IC", IC}, {"OC", OC}});
      },
      [&] { in_.matmul_bias_gelu_forward(out, pre, inp, w, bias, N, IC, OC); });
  fused_part(OpKind::GeluForward, double(N) * OC, dims({{"n", int64_t(N) * OC}}));
}
void ProfilingBackend::matmul_backward_gelu(void* dpre, void* dw, void* dbias, const void* dout, const void* gelu_out,
                                            const void* pre, const void* w, int N, int IC, int OC) {
  op(
      OpKind::MatmulBackward,
      [&](OpRecord& r) {
        r.flops = matmul_backward_flops(N, IC, OC, true, dw != nullptr, dbias != nullptr);
        r.params = int64_t(IC) * OC + (dbias ? OC : 0);
        r.shape = dims({{"N", N}, {"IC", IC}, {"OC", OC}});
      },
      [&] { in_.matmul_backward_gelu(dpre, dw, dbias, dout, gelu_out, pre, w, N, IC, OC); });
  fused_part(OpKind::GeluBackward, 2.0 * double(N) * IC, dims({{"n", int64_t(N) * IC}}));
}
void ProfilingBackend::residual_layernorm_forward(void* resid, void* out, float* mean, float* rstd, const void* a,
                                                  const void* b, const void* w, const void* bias, int N, int C) {
  fused_part(OpKind::ResidualForward, double(N) * C, dims({{"n", int64_t(N) * C}}));
  op(
      OpKind::LayerNormForward,
      [&](OpRecord& r) {
        r.flops = layernorm_forward_flops(N, C);
        r.params = 2 * int64_t(C);
        r.shape = dims({{"N", N}, {"C", C}});
      },
      [&] { in_.residual_layernorm_forward(resid, out, mean, rstd, a, b, w, bias, N, C); });
}
void ProfilingBackend::lm_head_forward(void* logits, const void* inp, const void* w, int N, int C, int V, int Vp) {
  op(
      OpKind::MatmulForward,
      [&](OpRecord& r) {
        r.flops = matmul_forward_flops(N, C, V, false);
        r.params = int64_t(C) * V;
        r.shape = dims({{"N", N}, {"IC", C}, {"OC", V}, {"Vp", Vp}});
      },
      [&] { in_.lm_head_forward(logits, inp, w, N, C, V, Vp); });
}
void ProfilingBackend::lm_head_backward(void* dinp, void* dw, const void* dlogits, const void* inp, const void* w,
                                        int N, int C, int V, int Vp) {
  op(
      OpKind::MatmulBackward,
      [&](OpRecord& r) {
        r.flops = matmul_backward_flops(N, C, V, dinp != nullptr, dw != nullptr, false);
        r.params = int64_t(C) * V;
        r.shape = dims({{"N", N}, {"IC", C}, {"OC", V}, {"Vp", Vp}});
      },
      [&] { in_.lm_head_backward(dinp, dw, dlogits, inp, w, N, C, V, Vp); });
}
void ProfilingBackend::adamw_step(float* p, const float* g, float* m, float* v, size_t n, const AdamWHyper& h) {
  op(OpKind::AdamW, [&](OpRecord& r) { r.shape = dims({{"n", int64_t(n)}}); }, [&] { in_.adamw_step(p, g, m, v, n, h); });
}

double ProfilingBackend::sum_squares(const void* x, size_t n, float scale) {
  double out = 0;
  op(
      OpKind::SumSquares,
      [&](OpRecord& r) {
        r.flops = 2.0 * double(n);
        r.shape = dims({{"n", int64_t(n)}});
      },
      [&] { out = in_.sum_squares(x, n, scale); });
  return out;
}
void ProfilingBackend::scale(void* x, float s, size_t n) {
  op(
      OpKind::Scale,
      [&](OpRecord& r) {
        r.flops = double(n);
        r.shape = dims({{"n", int64_t(n)}});
      },
      [&] { in_.scale(x, s, n); });
}
void ProfilingBackend::adamw_multi_tensor(const AdamWChunk* chunks, size_t count, DType grad_dtype,
                                          const AdamWHyper& h) {
  op(
      OpKind::AdamWMultiTensor,
      [&](OpRecord& r) {
        size_t n = 0;
        for (size_t i = 0; i < count; ++i) n += chunks[i].n;
        r.shape = dims({{"chunks", int64_t(count)}, {"n", int64_t(n)}});
      },
      [&] { in_.adamw_multi_tensor(chunks, count, grad_dtype, h); });
}

}  // namespace zt
