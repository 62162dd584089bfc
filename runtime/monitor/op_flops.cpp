// Op FLOPs: the per-op conventions of op_flops.h and the analytic GPT-2 step they add up to.
#include "runtime/monitor/op_flops.h"

namespace zt {

const char* op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::EmbeddingForward: return "embedding_forward";
    case OpKind::EmbeddingBackward: return "embedding_backward";
    case OpKind::LayerNormForward: return "layernorm_forward";
    case OpKind::LayerNormBackward: return "layernorm_backward";
    case OpKind::MatmulForward: return "matmul_forward";
    case OpKind::MatmulBackward: return "matmul_backward";
    case OpKind::AttentionForward: return "attention_forward";
    case OpKind::AttentionBackward: return "attention_backward";
    case OpKind::GeluForward: return "gelu_forward";
    case OpKind::GeluBackward: return "gelu_backward";
    case OpKind::ResidualForward: return "residual_forward";
    case OpKind::Accumulate: return "accumulate";
    case OpKind::CrossEntropy: return "crossentropy_forward_backward";
    case OpKind::AdamW: return "adamw_step";
    case OpKind::SumSquares: return "sum_squares";
    case OpKind::Scale: return "scale";
    case OpKind::AdamWMultiTensor: return "adamw_multi_tensor";
    case OpKind::Zero: return "zero";
    case OpKind::Copy: return "copy";
    case OpKind::CopyToDevice: return "copy_to_device";
    case OpKind::CopyToHost: return "copy_to_host";
    case OpKind::F32ToAct: return "f32_to_act";
    case OpKind::ActToF32: return "act_to_f32";
  }
  return "?";
}

bool op_computes(OpKind k) {
  switch (k) {
    case OpKind::Zero:
    case OpKind::Copy:
    case OpKind::CopyToDevice:
    case OpKind::CopyToHost:
    case OpKind::F32ToAct:
    case OpKind::ActToF32: return false;
    default: return true;
  }
}

bool op_is_backward(OpKind k) {
  switch (k) {
    case OpKind::EmbeddingBackward:
    case OpKind::LayerNormBackward:
    case OpKind::MatmulBackward:
    case OpKind::AttentionBackward:
    case OpKind::GeluBackward: return true;
    default: return false;
  }
}

double matmul_forward_flops(int64_t N, int64_t IC, int64_t OC, bool bias) {
  return 2.0 * double(N) * double(IC) * double(OC) + (bias ? double(N) * double(OC) : 0.0);
}

double matmul_backward_flops(int64_t N, int64_t IC, int64_t OC, bool dinp, bool dw, bool dbias) {
  const double gemm = 2.0 * double(N) * double(IC) * double(OC);
  return (dinp ? gemm : 0.0) + (dw ? gemm : 0.0) + (dbias ? double(N) * double(OC) : 0.0);
}

namespace {
double causal_pairs(int64_t T) { return double(T) * double(T + 1) / 2.0; }
}  // namespace

double attention_forward_flops(int64_t B, int64_t T, int64_t C) { return 4.0 * double(B) * double(C) * causal_pairs(T); }
double attention_backward_flops(int64_t B, int64_t T, int64_t C) { return 8.0 * double(B) * double(C) * causal_pairs(T); }
double layernorm_forward_flops(int64_t N, int64_t C) { return 5.0 * double(N) * double(C); }
double layernorm_backward_flops(int64_t N, int64_t C) { return 10.0 * double(N) * double(C); }

Gpt2Flops gpt2_training_flops(int64_t layers, int64_t C, int64_t V, int64_t T, int64_t sequences, bool recompute) {
  const double L = double(layers), c = double(C), tokens = double(T) * double(sequences);
  const double psi_w = 12.0 * L * c * c + double(V) * c;  // weight matrices of the linear layers
  const double psi_b = 9.0 * L * c;                       // their biases (the LM head has none)
  Gpt2Flops f;
  f.gemm_forward = (2.0 * psi_w + psi_b) * tokens;
  f.gemm_backward = (4.0 * psi_w + psi_b) * tokens;
  f.attention_forward = L * attention_forward_flops(sequences, T, C);
  f.attention_backward = L * attention_backward_flops(sequences, T, C);
  if (recompute) f.recompute = (2.0 * 12.0 * L * c * c + psi_b) * tokens + f.attention_forward;
  return f;
}

}  // namespace zt
