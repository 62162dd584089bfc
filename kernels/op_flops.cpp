// Op FLOPs: the per-op conventions of op_flops.h, each Backend op's recorded cost, and the analytic
// GPT-2 step they add up to.
#include "kernels/op_flops.h"

#include "kernels/backend.h"

#include <initializer_list>
#include <utility>

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
    case OpKind::RmsNormForward: return "rmsnorm_forward";
    case OpKind::RmsNormBackward: return "rmsnorm_backward";
    case OpKind::RopeForward: return "rope_forward";
    case OpKind::RopeBackward: return "rope_backward";
    case OpKind::SwigluForward: return "swiglu_forward";
    case OpKind::SwigluBackward: return "swiglu_backward";
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
    case OpKind::GeluBackward:
    case OpKind::RmsNormBackward:
    case OpKind::RopeBackward:
    case OpKind::SwigluBackward: return true;
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
double rmsnorm_forward_flops(int64_t N, int64_t C) { return 4.0 * double(N) * double(C); }
double rmsnorm_backward_flops(int64_t N, int64_t C) { return 8.0 * double(N) * double(C); }

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
OpCosts one(OpKind kind, double flops, std::string shape, int64_t params = 0) {
  return {OpCost{kind, flops, params, std::move(shape), false}};
}
OpCosts elementwise(OpKind kind, double flops_per_element, size_t n) {
  return one(kind, flops_per_element * double(n), dims({{"n", int64_t(n)}}));
}
OpCosts bytes(OpKind kind, size_t b) { return one(kind, 0, dims({{"bytes", int64_t(b)}})); }
OpCost fused(OpKind kind, double flops, int64_t n) { return {kind, flops, 0, dims({{"n", n}}), true}; }
}  // namespace

namespace op_cost {
OpCosts copy_to_device(size_t b) { return bytes(OpKind::CopyToDevice, b); }
OpCosts copy_to_host(size_t b) { return bytes(OpKind::CopyToHost, b); }
OpCosts copy(size_t b) { return bytes(OpKind::Copy, b); }
OpCosts zero(size_t b) { return bytes(OpKind::Zero, b); }
OpCosts f32_to_act(size_t n) { return elementwise(OpKind::F32ToAct, 0, n); }
OpCosts act_to_f32(size_t n) { return elementwise(OpKind::ActToF32, 0, n); }
OpCosts embedding_forward(int B, int T, int C) {
  return one(OpKind::EmbeddingForward, double(B) * T * C, dims({{"B", B}, {"T", T}, {"C", C}}));
}
OpCosts embedding_backward(int B, int T, int C) {
  return one(OpKind::EmbeddingBackward, 2.0 * B * T * C, dims({{"B", B}, {"T", T}, {"C", C}}));
}
OpCosts layernorm_forward(int N, int C) {
  return one(OpKind::LayerNormForward, layernorm_forward_flops(N, C), dims({{"N", N}, {"C", C}}), 2 * int64_t(C));
}
OpCosts layernorm_backward(int N, int C) {
  return one(OpKind::LayerNormBackward, layernorm_backward_flops(N, C), dims({{"N", N}, {"C", C}}), 2 * int64_t(C));
}
OpCosts matmul_forward(int N, int IC, int OC, bool bias) {
  return one(OpKind::MatmulForward, matmul_forward_flops(N, IC, OC, bias), dims({{"N", N}, {"IC", IC}, {"OC", OC}}),
             int64_t(IC) * OC + (bias ? OC : 0));
}
OpCosts matmul_backward(int N, int IC, int OC, bool dinp, bool dw, bool dbias) {
  return one(OpKind::MatmulBackward, matmul_backward_flops(N, IC, OC, dinp, dw, dbias),
             dims({{"N", N}, {"IC", IC}, {"OC", OC}}), int64_t(IC) * OC + (dbias ? OC : 0));
}
static std::string attention_shape(int B, int T, int C, int NH, int NKV) {
  std::string s = dims({{"B", B}, {"T", T}, {"C", C}, {"NH", NH}});
  if (NKV != NH) s += " NKV=" + std::to_string(NKV);
  return s;
}
OpCosts attention_forward(int B, int T, int C, int NH, int NKV) {
  return one(OpKind::AttentionForward, attention_forward_flops(B, T, C), attention_shape(B, T, C, NH, NKV));
}
OpCosts attention_backward(int B, int T, int C, int NH, int NKV) {
  return one(OpKind::AttentionBackward, attention_backward_flops(B, T, C), attention_shape(B, T, C, NH, NKV));
}
OpCosts gelu_forward(size_t n) { return elementwise(OpKind::GeluForward, 1, n); }
OpCosts gelu_backward(size_t n) { return elementwise(OpKind::GeluBackward, 2, n); }
OpCosts rmsnorm_forward(int N, int C) {
  return one(OpKind::RmsNormForward, rmsnorm_forward_flops(N, C), dims({{"N", N}, {"C", C}}), int64_t(C));
}
OpCosts rmsnorm_backward(int N, int C) {
  return one(OpKind::RmsNormBackward, rmsnorm_backward_flops(N, C), dims({{"N", N}, {"C", C}}), int64_t(C));
}
OpCosts rope_forward(int B, int T, int heads, int hd) {
  return one(OpKind::RopeForward, 3.0 * double(B) * T * heads * hd,
             dims({{"B", B}, {"T", T}, {"heads", heads}, {"hd", hd}}));
}
OpCosts rope_backward(int B, int T, int heads, int hd) {
  return one(OpKind::RopeBackward, 3.0 * double(B) * T * heads * hd,
             dims({{"B", B}, {"T", T}, {"heads", heads}, {"hd", hd}}));
}
OpCosts swiglu_forward(int N, int F) {
  return one(OpKind::SwigluForward, 2.0 * double(N) * F, dims({{"N", N}, {"F", F}}));
}
OpCosts swiglu_backward(int N, int F) {
  return one(OpKind::SwigluBackward, 4.0 * double(N) * F, dims({{"N", N}, {"F", F}}));
}
OpCosts residual_forward(size_t n) { return elementwise(OpKind::ResidualForward, 1, n); }
OpCosts accumulate(size_t n) { return elementwise(OpKind::Accumulate, 1, n); }
OpCosts crossentropy_forward_backward(int N, int V, int Vp) {
  return one(OpKind::CrossEntropy, 2.0 * double(N) * V, dims({{"N", N}, {"V", V}, {"Vp", Vp}}));
}
OpCosts adamw_step(size_t n) { return elementwise(OpKind::AdamW, 0, n); }
OpCosts sum_squares(size_t n) { return elementwise(OpKind::SumSquares, 2, n); }
OpCosts scale(size_t n) { return elementwise(OpKind::Scale, 1, n); }
OpCosts adamw_multi_tensor(const AdamWChunk* chunks, size_t count) {
  size_t n = 0;
  for (size_t i = 0; i < count; ++i) n += chunks[i].n;
  return one(OpKind::AdamWMultiTensor, 0, dims({{"chunks", int64_t(count)}, {"n", int64_t(n)}}));
}
OpCosts matmul_bias_gelu_forward(int N, int IC, int OC, bool bias) {
  OpCosts c = matmul_forward(N, IC, OC, bias);
  c.push_back(fused(OpKind::GeluForward, double(N) * OC, int64_t(N) * OC));
  return c;
}
OpCosts matmul_backward_gelu(int N, int IC, int OC, bool dw, bool dbias) {
  OpCosts c = matmul_backward(N, IC, OC, true, dw, dbias);
  c.push_back(fused(OpKind::GeluBackward, 2.0 * double(N) * IC, int64_t(N) * IC));
  return c;
}
OpCosts residual_layernorm_forward(int N, int C) {
  OpCosts c = layernorm_forward(N, C);
  c.insert(c.begin(), fused(OpKind::ResidualForward, double(N) * C, int64_t(N) * C));
  return c;
}
OpCosts residual_rmsnorm_forward(int N, int C) {
  OpCosts c = rmsnorm_forward(N, C);
  c.insert(c.begin(), fused(OpKind::ResidualForward, double(N) * C, int64_t(N) * C));
  return c;
}
OpCosts lm_head_forward(int N, int C, int V, int Vp) {
  return one(OpKind::MatmulForward, matmul_forward_flops(N, C, V, false),
             dims({{"N", N}, {"IC", C}, {"OC", V}, {"Vp", Vp}}), int64_t(C) * V);
}
OpCosts lm_head_backward(int N, int C, int V, int Vp, bool dinp, bool dw) {
  return one(OpKind::MatmulBackward, matmul_backward_flops(N, C, V, dinp, dw, false),
             dims({{"N", N}, {"IC", C}, {"OC", V}, {"Vp", Vp}}), int64_t(C) * V);
}
}  // namespace op_cost

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

Gpt2Flops llama_training_flops(int64_t layers, int64_t C, int64_t V, int64_t T, int64_t heads, int64_t kv_heads,
                               int64_t head_dim, int64_t intermediate, int64_t sequences, bool recompute) {
  const double L = double(layers), c = double(C), tokens = double(T) * double(sequences);
  const double A = double(heads * head_dim), Q = double((heads + 2 * kv_heads) * head_dim), I = double(intermediate);
  const double block_w = Q * c + c * A + 3.0 * I * c;  // qkv, o_proj, gate and up, down
  const double psi_w = L * block_w + double(V) * c;
  Gpt2Flops f;
  f.gemm_forward = 2.0 * psi_w * tokens;
  f.gemm_backward = 4.0 * psi_w * tokens;
  f.attention_forward = L * attention_forward_flops(sequences, T, heads * head_dim);
  f.attention_backward = L * attention_backward_flops(sequences, T, heads * head_dim);
  if (recompute) f.recompute = 2.0 * L * block_w * tokens + f.attention_forward;
  return f;
}

}  // namespace zt
