// The CPU backend's op implementations (fp32, OpenMP), one family per .cpp file. Internal to
// kernels/cpu: the public entry points are make_cpu_backend() and cpu_threads.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/backend.h"
#include "kernels/cpu/attention.h"

namespace zt::cpu {

// Determinism rule for every op here: each output element is produced by exactly one thread, in
// a fixed order of summation that does not depend on the number of threads. Reductions over rows
// are therefore parallelised over the reduced-into dimension (channels), never over rows.

// Channels handled per task in column-wise reductions (fixed, so results never depend on threads).
inline constexpr int kChannelChunk = 64;

void embedding_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe, int B, int T,
                       int C);
void embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int B, int T,
                        int C);

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w, const float* b,
                       int N, int C);
void layernorm_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp, const float* w,
                        const float* mean, const float* rstd, int N, int C);

void matmul_forward(float* out, const float* inp, const float* w, const float* bias, int N, int IC, int OC);
void matmul_backward(float* dinp, float* dw, float* dbias, const float* dout, const float* inp, const float* w,
                     int N, int IC, int OC);

// Attention (tiled, flash-style): kernels/cpu/attention.h.

void gelu_forward(float* out, const float* inp, size_t n);
void gelu_backward(float* dinp, const float* inp, const float* dout, size_t n);
// Single-threaded pieces for the GEMM epilogues: out = gelu(pre); d *= gelu'(pre).
void gelu_rows(float* out, const float* pre, size_t n);
void gelu_grad_rows(float* d, const float* pre, size_t n);

// Llama's ops (Backend's comments give the formulas). RMSNorm: dinp and dw accumulate (either may be
// null). RoPE: in place on the first `heads` heads of each row; backward rotates by −θ in place.
// SwiGLU: gate_up rows [gate | up], dgate_up accumulates.
void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* w, int N, int C, float eps);
void rmsnorm_backward(float* dinp, float* dw, const float* dout, const float* inp, const float* w, const float* rstd,
                      int N, int C);
void residual_rmsnorm_forward(float* resid, float* out, float* rstd, const float* a, const float* b, const float* w,
                              int N, int C, float eps);
void rope_forward(float* x, const float* cos, const float* sin, int B, int T, int heads, int hd, int row_stride);
void rope_backward(float* dx, const float* cos, const float* sin, int B, int T, int heads, int hd, int row_stride);
void swiglu_forward(float* out, const float* gate_up, int N, int F);
void swiglu_backward(float* dgate_up, const float* dout, const float* gate_up, int N, int F);

// dlogits may be logits (in place); rows are Vp apart, columns V..Vp masked.
void crossentropy_forward_backward(float* losses, float* dlogits, const float* logits, const int32_t* targets,
                                   int N, int V, int Vp, float dloss);

// Fused ops (Backend's fused section).
void matmul_bias_gelu_forward(float* out, float* pre, const float* inp, const float* w, const float* bias, int N,
                              int IC, int OC);
void matmul_backward_gelu(float* dpre, float* dw, float* dbias, const float* dout, const float* gelu_out,
                          const float* pre, const float* w, int N, int IC, int OC);
void residual_layernorm_forward(float* resid, float* out, float* mean, float* rstd, const float* a,
                                const float* bb, const float* w, const float* b, int N, int C);
void lm_head_forward(float* logits, const float* inp, const float* w, int N, int C, int V, int Vp);
void lm_head_backward(float* dinp, float* dw, const float* dlogits, const float* inp, const float* w, int N, int C,
                      int V, int Vp);

void adamw_step(float* p, const float* g, float* m, float* v, size_t n, const AdamWHyper& h);

}  // namespace zt::cpu
