// Op FLOPs: the floating-point operations, parameters and shape of one call of each Backend op,
// computed from its arguments — the one table the backends record with (op_record.h) and the flops
// profiler counts with. A new Backend op adds its kind and its line in `op_cost` here.
//
//   matmul_forward    2·N·IC·OC for the GEMM, + N·OC when a bias is added
//   matmul_backward   2·N·IC·OC for dinp and 2·N·IC·OC for dW (each when its pointer is given),
//                     + N·OC for dbias
//   attention_forward  causal: P = T(T+1)/2 (query, key) pairs per sequence and head; QKᵀ and PV
//                     cost 2·hs each per pair: 4·B·C·P (the softmax's exp/max/sum are not counted,
//                     as in the 6Ψ + attention formula)
//   attention_backward dV, dP, dQ, dK: 8·B·C·P
//   layernorm          forward 5·N·C (DeepSpeed's convention with an affine transform), backward 10·N·C
//   gelu               forward 1 per element (DeepSpeed's), backward 2 per element
//   rmsnorm            forward 4·N·C (square, sum, scale, weight), backward 8·N·C
//   rope               forward and backward 3 per rotated element (2 products and a sum)
//   swiglu             forward 2 per output element (the SiLU counted 1, as GELU, and the
//                     product), backward 4 per output element
//   attention with NKV < NH   as multi-head attention of the same C = NH·hs: QKᵀ and PV are
//                     per query head; GQA shrinks only the K/V projections (matmul ops)
//   residual_forward, accumulate   1 per element
//   embedding          forward N·C (token row + position row), backward 2·N·C
//   crossentropy_forward_backward  2·N·V (softmax 1 per element, as DeepSpeed counts it, and the
//                     gradient 1 per element)
//   sum_squares        2 per element (the engine's gradient-norm partial); scale 1 per element
//   memory ops (copies, zero, conversions), adamw_step and adamw_multi_tensor   0 (not model FLOPs)
// With these, the linear layers of one GPT-2 training token cost exactly 6Ψ_w + 2Ψ_b and the causal
// attention 12·C·L·(T+1)/2 per token (gpt2_training_flops below; the test pins the equality).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace zt {

struct AdamWChunk;  // kernels/backend.h

enum class OpKind {
  EmbeddingForward, EmbeddingBackward, LayerNormForward, LayerNormBackward, MatmulForward, MatmulBackward,
  AttentionForward, AttentionBackward, GeluForward, GeluBackward, ResidualForward, Accumulate, CrossEntropy,
  AdamW, SumSquares, Scale, AdamWMultiTensor, RmsNormForward, RmsNormBackward, RopeForward, RopeBackward,
  SwigluForward, SwigluBackward, Zero, Copy, CopyToDevice, CopyToHost, F32ToAct, ActToF32,
};
constexpr int kOpKinds = int(OpKind::ActToF32) + 1;
const char* op_kind_name(OpKind k);
// True for the ops that compute (every kind with FLOPs); false for copies, zeroing and conversions.
bool op_computes(OpKind k);
// True for the ops of the backward pass (their FLOPs count as backward).
bool op_is_backward(OpKind k);

double matmul_forward_flops(int64_t N, int64_t IC, int64_t OC, bool bias);
double matmul_backward_flops(int64_t N, int64_t IC, int64_t OC, bool dinp, bool dw, bool dbias);
double attention_forward_flops(int64_t B, int64_t T, int64_t C);
double attention_backward_flops(int64_t B, int64_t T, int64_t C);
double layernorm_forward_flops(int64_t N, int64_t C);
double layernorm_backward_flops(int64_t N, int64_t C);
double rmsnorm_forward_flops(int64_t N, int64_t C);
double rmsnorm_backward_flops(int64_t N, int64_t C);

// What one call of a Backend op costs, as recorded: a plain op gives one entry; a fused op gives its
// main op (the GEMM or the LayerNorm, which carries the call's time) and the op fused into it
// (`fused`: FLOPs without a time of its own), so totals and per-kind counts stay as unfused.
struct OpCost {
  OpKind kind = OpKind::Zero;
  double flops = 0;
  int64_t params = 0;  // weight elements the op reads (matmul, layernorm); 0 otherwise
  std::string shape;   // "N=256 IC=128 OC=384"
  bool fused = false;
};
using OpCosts = std::vector<OpCost>;

// The table: one function per recorded Backend op, named as the op, taking the arguments that set
// its cost (a pointer argument that may be null enters as a bool). Not recorded: alloc/free, the
// asynchronous copies and their waits, synchronize, attention_decode (generation only).
namespace op_cost {
OpCosts copy_to_device(size_t bytes);
OpCosts copy_to_host(size_t bytes);
OpCosts copy(size_t bytes);
OpCosts zero(size_t bytes);
OpCosts f32_to_act(size_t n);
OpCosts act_to_f32(size_t n);
OpCosts embedding_forward(int B, int T, int C);
OpCosts embedding_backward(int B, int T, int C);
OpCosts layernorm_forward(int N, int C);
OpCosts layernorm_backward(int N, int C);
OpCosts matmul_forward(int N, int IC, int OC, bool bias);
OpCosts matmul_backward(int N, int IC, int OC, bool dinp, bool dw, bool dbias);
// The shape names NKV only when it differs from NH (grouped-query attention).
OpCosts attention_forward(int B, int T, int C, int NH, int NKV);
OpCosts attention_backward(int B, int T, int C, int NH, int NKV);
OpCosts gelu_forward(size_t n);
OpCosts gelu_backward(size_t n);
OpCosts rmsnorm_forward(int N, int C);
OpCosts rmsnorm_backward(int N, int C);
OpCosts rope_forward(int B, int T, int heads, int hd);
OpCosts rope_backward(int B, int T, int heads, int hd);
OpCosts swiglu_forward(int N, int F);
OpCosts swiglu_backward(int N, int F);
OpCosts residual_forward(size_t n);
OpCosts accumulate(size_t n);
OpCosts crossentropy_forward_backward(int N, int V, int Vp);
OpCosts adamw_step(size_t n);
OpCosts sum_squares(size_t n);
OpCosts scale(size_t n);
OpCosts adamw_multi_tensor(const AdamWChunk* chunks, size_t count);
OpCosts matmul_bias_gelu_forward(int N, int IC, int OC, bool bias);
OpCosts matmul_backward_gelu(int N, int IC, int OC, bool dw, bool dbias);
OpCosts residual_layernorm_forward(int N, int C);
OpCosts residual_rmsnorm_forward(int N, int C);
OpCosts lm_head_forward(int N, int C, int V, int Vp);
OpCosts lm_head_backward(int N, int C, int V, int Vp, bool dinp, bool dw);
}  // namespace op_cost

// Analytic GEMM + attention FLOPs of one training step of GPT-2 per rank (forward and backward over
// `tokens` = micro_batch · seq_len · grad_accum tokens, sequences of length T): 6·Ψ_w·tokens for the
// weight matrices Ψ_w = 12·L·C² + V·C (the LM head, tied or not), 2·Ψ_b·tokens for the biases of
// the linear layers Ψ_b = 9·L·C (+ 1 bias add forward and 1 reduction backward each), and the causal
// attention 12·C·L·(T(T+1)/2) per sequence. With recompute the blocks' forward GEMMs run twice:
// recompute adds 2·12·L·C²·tokens + L·9·C·tokens + 4·C·L·T(T+1)/2 per sequence.
struct Gpt2Flops {
  double gemm_forward = 0, gemm_backward = 0, attention_forward = 0, attention_backward = 0;
  double recompute = 0;  // extra forward GEMM + attention work under activation checkpointing
  double model() const { return gemm_forward + gemm_backward + attention_forward + attention_backward; }
};
Gpt2Flops gpt2_training_flops(int64_t layers, int64_t C, int64_t V, int64_t T, int64_t sequences, bool recompute);

// The same for Llama (no biases): 6·Ψ_w·tokens with Ψ_w = L·(Q·C + C·A + 3·I·C) + V·C, where
// A = H·hd (q rows, o_proj columns) and Q = (H + 2·Hkv)·hd (the stacked q, k, v rows: GQA shrinks
// only the k and v projections), 3·I·C the gate, up and down matrices, V·C the LM head (tied or
// not); the causal attention 12·A·L·(T(T+1)/2) per sequence (per query head, so GQA does not
// shrink it). Recompute adds the blocks' forward GEMMs and attention once more. The fields mean
// what they mean for GPT-2.
Gpt2Flops llama_training_flops(int64_t layers, int64_t C, int64_t V, int64_t T, int64_t heads, int64_t kv_heads,
                               int64_t head_dim, int64_t intermediate, int64_t sequences, bool recompute);

}  // namespace zt
