// Op FLOPs: the floating-point operations and parameters of one call of each Backend op, computed
// from its arguments — the conventions the flops profiler counts with (a table, one line per op).
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
//   residual_forward, accumulate   1 per element
//   embedding          forward N·C (token row + position row), backward 2·N·C
//   crossentropy_forward_backward  2·N·V (softmax 1 per element, as DeepSpeed counts it, and the
//                     gradient 1 per element)
//   sum_squares        2 per element (the engine's gradient-norm partial); scale 1 per element
//   memory ops (copies, zero, conversions), adamw_step and adamw_multi_tensor   0 (not model FLOPs)
// With these, the linear layers of one GPT-2 training token cost exactly 6Ψ_w + 2Ψ_b and the causal
// attention 12·C·L·(T+1)/2 per token (gpt2_training_flops below; the test pins the equality).
#pragma once

#include <cstdint>
#include <string>

namespace zt {

enum class OpKind {
  EmbeddingForward, EmbeddingBackward, LayerNormForward, LayerNormBackward, MatmulForward, MatmulBackward,
  AttentionForward, AttentionBackward, GeluForward, GeluBackward, ResidualForward, Accumulate, CrossEntropy,
  AdamW, SumSquares, Scale, AdamWMultiTensor, Zero, Copy, CopyToDevice, CopyToHost, F32ToAct, ActToF32,
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

}  // namespace zt
