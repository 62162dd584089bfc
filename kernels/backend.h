// Backend: the compute interface the model and engine call — memory, an ordering handle, and the
// model ops (forward and backward: GPT-2's, and Llama's RMSNorm, RoPE, SwiGLU and grouped-query
// attention) — implemented by kernels/cpu (fp32) and kernels/cuda (bf16).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "base/dtype.h"
#include "base/optimizer.h"

namespace zt {

class OpRecorder;  // kernels/op_record.h

// Buffers' element type (base/dtype.h): the CPU backend computes in F32; the CUDA backend in BF16
// with fp32 accumulation (its act_dtype). Master weights and optimizer state are always F32.

// One contiguous piece of a multi-tensor AdamW: fp32 master and moments and the gradient (of the
// dtype passed with the call) in backend memory; `working` (act_dtype, may be null) receives the
// updated parameters rounded to the working precision.
struct AdamWChunk {
  float* master = nullptr;
  const void* grad = nullptr;
  float* m = nullptr;
  float* v = nullptr;
  void* working = nullptr;
  size_t n = 0;
};

// Conventions shared by every implementation (tests pin them):
// * Pointers named d_* or dw/db/dinp are gradient buffers. Parameter gradients (dw, db, dwte, ...)
//   ACCUMULATE (+=) so that micro-batches add up; activation gradients (dinp) also accumulate, and
//   the caller zeroes them before a backward pass (the residual stream needs +=).
// * Matrices are row-major. A linear layer stores W as [OC, IC] (PyTorch's nn.Linear layout):
//   out[N, OC] = inp[N, IC] · Wᵀ + bias.
// * "N" counts rows (B·T), "C" channels. Buffers of activations and weights are act_dtype();
//   statistics (mean, rstd), losses and AdamW state are F32.
// * Every op is ordered on the backend's stream; call synchronize() before reading results on
//   the host. All memory passed to ops comes from alloc().
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // "cpu" or "cuda"
  virtual DType act_dtype() const = 0;

  // --- memory ------------------------------------------------------------------------------
  virtual void* alloc(size_t bytes) = 0;                 // device memory (host memory on CPU)
  virtual void free(void* p) = 0;
  virtual void copy_to_device(void* dst, const void* host_src, size_t bytes) = 0;
  virtual void copy_to_host(void* host_dst, const void* src, size_t bytes) = 0;
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;  // device to device
  virtual void zero(void* p, size_t bytes) = 0;
  // Conversions between fp32 host/master values and act_dtype buffers (round to nearest even).
  virtual void f32_to_act(void* dst, const float* src_f32, size_t n) = 0;
  virtual void act_to_f32(float* dst_f32, const void* src, size_t n) = 0;

  // --- asynchronous host transfers (offload) ---------------------------------------------------
  // Copies between host memory and backend memory on a copy lane apart from the compute stream, so
  // that they overlap host work and kernels. A copy starts after every op issued before it. Its
  // buffers must stay untouched until wait_copy(ticket) returns; after that, the copy (and every
  // earlier copy in the same direction) is complete and later ops see its result. Host buffers
  // should be pinned (offload::PinnedAllocator) or the device copy is not truly asynchronous.
  // The defaults copy synchronously (a ticket that is complete at once).
  using CopyTicket = uint64_t;
  virtual CopyTicket copy_to_host_async(void* host_dst, const void* src, size_t bytes) {
    copy_to_host(host_dst, src, bytes);
    return 0;
  }
  virtual CopyTicket copy_to_device_async(void* dst, const void* host_src, size_t bytes) {
    copy_to_device(dst, host_src, bytes);
    return 0;
  }
  virtual void wait_copy(CopyTicket) {}

  // --- ordering ------------------------------------------------------------------------------
  // Waits for every op and every asynchronous copy issued so far.
  virtual void synchronize() = 0;
  virtual void* native_stream() { return nullptr; }  // cudaStream_t on CUDA, nullptr on CPU

  // --- profiling (kernels/op_record.h) -------------------------------------------------------
  // While a recorder is attached, every op below records itself into it (each implementation opens
  // its op with a RecordedOp line); detached (null, the default), that costs one pointer test.
  void attach_op_recorder(OpRecorder* r) { op_recorder_ = r; }
  OpRecorder* op_recorder() const { return op_recorder_; }

  // --- ops -------------------------------------------------------------------------------------
  // out[b,t,:] = wte[tokens[b,t],:] + wpe[t,:]. wpe may be null (no position table, Llama): out is the
  // token row; in backward dwpe may be null (nothing accumulated there).
  virtual void embedding_forward(void* out, const int32_t* tokens, const void* wte, const void* wpe,
                                 int B, int T, int C) = 0;
  virtual void embedding_backward(void* dwte, void* dwpe, const void* dout, const int32_t* tokens,
                                  int B, int T, int C) = 0;

  // LayerNorm over the last dim, eps 1e-5; mean and rstd [N] saved for backward.
  virtual void layernorm_forward(void* out, float* mean, float* rstd, const void* inp, const void* w,
                                 const void* b, int N, int C) = 0;
  virtual void layernorm_backward(void* dinp, void* dw, void* db, const void* dout, const void* inp,
                                  const void* w, const float* mean, const float* rstd, int N, int C) = 0;

  // out = inp · Wᵀ + bias (bias may be null).
  virtual void matmul_forward(void* out, const void* inp, const void* w, const void* bias, int N, int IC,
                              int OC) = 0;
  // dinp += dout · W;  dw += doutᵀ · inp;  dbias += Σ_rows dout (dbias may be null).
  virtual void matmul_backward(void* dinp, void* dw, void* dbias, const void* dout, const void* inp,
                               const void* w, int N, int IC, int OC) = 0;

  // Causal self-attention with NH query heads and NKV key/value heads (grouped-query attention:
  // NKV divides NH, query head h uses key/value head h / (NH / NKV); NKV == NH is multi-head
  // attention, GPT-2's). The head size is hs = C / NH; C = NH·hs is the width of q and of out.
  // qkv [B, T, (NH + 2·NKV)·hs] packs, per row, q (NH heads), then k (NKV heads), then v (NKV
  // heads), each head hs wide — for NKV == NH the GPT-2 layout [B,T,3C]. out [B,T,C]. K and V are
  // never replicated: backward accumulates dK and dV per key/value head over its NH / NKV query
  // heads. `saved` holds what backward needs (attention probabilities or statistics),
  // attention_saved_bytes() long (it does not depend on NKV); forward writes it, backward reads it.
  virtual size_t attention_saved_bytes(int B, int T, int C, int NH) const = 0;
  virtual void attention_forward(void* out, void* saved, const void* qkv, int B, int T, int C, int NH,
                                 int NKV) = 0;
  virtual void attention_backward(void* dqkv, const void* dout, const void* qkv, const void* saved, int B,
                                  int T, int C, int NH, int NKV) = 0;
  // Multi-head attention (NKV = NH), qkv [B,T,3C].
  void attention_forward(void* out, void* saved, const void* qkv, int B, int T, int C, int NH) {
    attention_forward(out, saved, qkv, B, T, C, NH, NH);
  }
  void attention_backward(void* dqkv, const void* dout, const void* qkv, const void* saved, int B, int T, int C,
                          int NH) {
    attention_backward(dqkv, dout, qkv, saved, B, T, C, NH, NH);
  }

  // One new query row per sequence against a key/value cache (generation): cache [B, Tmax, W] holds
  // q, k, v of positions 0..t-1 packed as attention_forward's qkv (W = (NH + 2·NKV)·hs, rows W apart,
  // sequences Tmax rows apart; the key/value part holds NKV heads, never replicated); out [B, C] =
  // softmax(q_{t-1} · K[0..t)ᵀ · scale) · V[0..t) per query head, query head h reading key/value
  // head h / (NH / NKV), i.e. row t - 1 of attention_forward over the first t positions (equal up to
  // rounding; tests pin it).
  virtual void attention_decode(void* out, const void* qkv_cache, int B, int Tmax, int t, int C, int NH,
                                int NKV) = 0;
  // Multi-head (NKV = NH), cache rows 3C.
  void attention_decode(void* out, const void* qkv_cache, int B, int Tmax, int t, int C, int NH) {
    attention_decode(out, qkv_cache, B, Tmax, t, C, NH, NH);
  }

  // GELU, tanh approximation (GPT-2's).
  virtual void gelu_forward(void* out, const void* inp, size_t n) = 0;
  virtual void gelu_backward(void* dinp, const void* inp, const void* dout, size_t n) = 0;  // dinp +=

  // --- Llama's ops ---------------------------------------------------------------------------
  // RMSNorm over the last dim (no mean, no bias), statistics in fp32: out = w ∘ (x · rstd) with
  // rstd = 1 / sqrt(mean(x²) + eps), saved [N] (F32) for backward.
  virtual void rmsnorm_forward(void* out, float* rstd, const void* inp, const void* w, int N, int C, float eps) = 0;
  // With x̂ = x · rstd and g = dout: dinp += rstd · (w∘g − x̂ · mean(w∘g∘x̂)), dw += Σ_rows g∘x̂.
  virtual void rmsnorm_backward(void* dinp, void* dw, const void* dout, const void* inp, const void* w,
                                const float* rstd, int N, int C) = 0;

  // Rotary position embedding, rotate-half convention (transformers' Llama), IN PLACE on the first
  // `heads` heads (hd wide, hd even) of each of the B·T rows of x, rows `row_stride` elements apart;
  // columns past heads·hd are untouched. For q and k inside attention's qkv: heads = NH + NKV,
  // row_stride = (NH + 2·NKV)·hd. The row of sequence position t uses cos[t·hd/2 + i] and
  // sin[t·hd/2 + i], an fp32 table [T, hd/2] in backend memory (kernels/rope_table.h builds it):
  //   y_i = x_i·cos_i − x_{i+hd/2}·sin_i,   y_{i+hd/2} = x_{i+hd/2}·cos_i + x_i·sin_i   (i < hd/2).
  virtual void rope_forward(void* x, const float* cos, const float* sin, int B, int T, int heads, int hd,
                            int row_stride) = 0;
  // The transpose, a rotation by −θ, applied IN PLACE to the gradient of the rotated values (it
  // turns d(rotated) into d(unrotated); this is a transform of the buffer, not an accumulation):
  //   d_i ← d_i·cos_i + d_{i+hd/2}·sin_i,   d_{i+hd/2} ← d_{i+hd/2}·cos_i − d_i·sin_i.
  virtual void rope_backward(void* dx, const float* cos, const float* sin, int B, int T, int heads, int hd,
                             int row_stride) = 0;

  // SwiGLU on N rows of gate_up [N, 2F]: gate in columns 0..F, up in F..2F of each row (one GEMM
  // with the gate and up weights stacked [2F, C]); out [N, F] = silu(gate) ∘ up, silu(g) = g·σ(g).
  virtual void swiglu_forward(void* out, const void* gate_up, int N, int F) = 0;
  // dgate_up += (dout ∘ up ∘ σ(g)(1 + g(1 − σ(g))),  dout ∘ silu(g)) in the same packing.
  virtual void swiglu_backward(void* dgate_up, const void* dout, const void* gate_up, int N, int F) = 0;

  // out = a + b (out may alias a or b).
  virtual void residual_forward(void* out, const void* a, const void* b, size_t n) = 0;
  // acc += x
  virtual void accumulate(void* acc, const void* x, size_t n) = 0;

  // Softmax cross-entropy over V classes for N rows of logits whose rows are Vp >= V elements apart
  // (the vocabulary padded for the GEMMs; columns V..Vp are masked: never read, gradient 0). Writes
  // the per-row loss (F32, [N]) and OVERWRITES dlogits (all Vp columns) with d(mean loss)/d(logits) ·
  // dloss, i.e. (softmax - onehot) · dloss / N. dlogits may be logits itself (one buffer, in place).
  // Targets < 0 are ignored (no loss, zero gradient, not counted in N).
  virtual void crossentropy_forward_backward(float* losses, void* dlogits, const void* logits,
                                             const int32_t* targets, int N, int V, int Vp, float dloss) = 0;

  // The simple AdamW on a flat fp32 span (master weights p, grads g, moments m and v, all F32).
  virtual void adamw_step(float* p, const float* g, float* m, float* v, size_t n, const AdamWHyper& h) = 0;

  // --- the ZeRO step on backend memory (global norm partials, scaling, the shard update) ---------
  // Σ (x_i · scale)² over n act_dtype() values, each product rounded to fp32, summed in double:
  // one rank's partial of the global gradient norm. CPU: base/fixed_order_sum.h's order (same bits
  // for every thread count); CUDA: a fixed-order two-pass reduction on the device, deterministic,
  // with one 8-byte copy back (the gradients never leave the device). Waits for earlier ops.
  virtual double sum_squares(const void* x, size_t n, float scale) = 0;
  // x *= s over n act_dtype() values, in place (each product rounded once).
  virtual void scale(void* x, float s, size_t n) = 0;
  // Multi-tensor AdamW (base/adam_math.h's formula) over every chunk in as few launches as the
  // backend needs; grads of grad_dtype (F32, BF16 or F16). Ordered on the backend's stream.
  virtual void adamw_multi_tensor(const AdamWChunk* chunks, size_t count, DType grad_dtype, const AdamWHyper& h) = 0;

  // === Fused ops (the model's hot paths in fewer passes; each equals the unfused ops it replaces
  // up to rounding, which tests pin on both backends) ============================================
  // out = gelu(pre), pre = inp · Wᵀ + bias (pre is kept for the backward). CUDA: one cuBLASLt GEMM
  // with the GELU_AUX_BIAS epilogue; CPU: the bias and GELU applied per GEMM tile right after it.
  virtual void matmul_bias_gelu_forward(void* out, void* pre, const void* inp, const void* w, const void* bias,
                                        int N, int IC, int OC) = 0;
  // The linear layer that consumes gelu(pre), and the GELU's backward: dw += doutᵀ · gelu(pre),
  // dbias += Σ_rows dout (dbias may be null), and dpre = (dout · W) ∘ gelu'(pre), OVERWRITTEN.
  // `gelu_out` is this layer's input gelu(pre) [N, IC]; pre, dpre are [N, IC].
  virtual void matmul_backward_gelu(void* dpre, void* dw, void* dbias, const void* dout, const void* gelu_out,
                                    const void* pre, const void* w, int N, int IC, int OC) = 0;
  // resid = a + b (may alias a or b), then out = LayerNorm(resid) with mean, rstd [N] as
  // layernorm_forward: the residual add and the next LayerNorm in one pass over the rows.
  virtual void residual_layernorm_forward(void* resid, void* out, float* mean, float* rstd, const void* a,
                                          const void* b, const void* w, const void* bias, int N, int C) = 0;
  // resid = a + b (may alias a or b), then out = RMSNorm(resid) with rstd [N] as rmsnorm_forward
  // (Llama's residual add and the next RMSNorm in one pass over the rows).
  virtual void residual_rmsnorm_forward(void* resid, void* out, float* rstd, const void* a, const void* b,
                                        const void* w, int N, int C, float eps) = 0;
  // The LM head over a padded vocabulary: logits [N, Vp], columns 0..V = inp · Wᵀ (W [V, C], no
  // bias), columns V..Vp set to 0. Backward: dinp += dlogits[:, :V] · W, dw += dlogits[:, :V]ᵀ · inp
  // (dlogits rows Vp apart; dinp or dw may be null).
  virtual void lm_head_forward(void* logits, const void* inp, const void* w, int N, int C, int V, int Vp) = 0;
  virtual void lm_head_backward(void* dinp, void* dw, const void* dlogits, const void* inp, const void* w, int N,
                                int C, int V, int Vp) = 0;
  // === end of fused ops ===========================================================================

 private:
  OpRecorder* op_recorder_ = nullptr;
};

// Factories. make_cuda_backend() throws std::runtime_error when no GPU is usable, with the reason.
std::unique_ptr<Backend> make_cpu_backend();
std::unique_ptr<Backend> make_cuda_backend(int device = 0);
bool cuda_backend_compiled();

}  // namespace zt
