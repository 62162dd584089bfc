// Llama forward and backward, one unit per call: token embedding, pre-norm blocks (RMSNorm, RoPE,
// grouped-query attention, SwiGLU MLP), and the head (final RMSNorm, LM head over the padded
// vocabulary, softmax cross-entropy), with optional block recompute.
#include "runtime/model/llama.h"

#include <stdexcept>
#include <string>

#include "kernels/rope_table.h"
#include "runtime/model/llama_block.h"

namespace zt {

// One block's activations, N rows each: what backward reads (or recomputes with checkpointing),
// the forward's buffers and the attention's saved state (attention_saved_bytes).
struct Llama::BlockActs : LlamaBlockBuffers {
  void* att = nullptr;
};

void llama_block_forward(Backend& backend, const ModelConfig& config, const UnitLayout& layout, const void* params,
                         const void* x, void* out, const LlamaBlockBuffers& a, const float* rope_cos,
                         const float* rope_sin, int B, int T, const std::function<void()>& attention) {
  const int N = B * T, C = config.dim, H = config.heads, Hkv = config.kv_head_count(), hd = config.head_width(),
            A = int(config.attention_width()), Q = int(config.qkv_rows()), I = config.intermediate;
  const float eps = config.norm_eps;
  const UnitView p{layout, (char*)params, dtype_size(backend.act_dtype())};
  backend.rmsnorm_forward(a.ln1, a.rstd1, x, p("ln1_w"), N, C, eps);
  backend.matmul_forward(a.qkv, a.ln1, p("qkv_w"), nullptr, N, C, Q);
  backend.rope_forward(a.qkv, rope_cos, rope_sin, B, T, H + Hkv, hd, Q);  // q and k heads
  attention();
  backend.matmul_forward(a.r2, a.atty, p("attproj_w"), nullptr, N, A, C);  // attention branch
  // r2 = x + attention branch, and ln2 = RMSNorm(r2), in one pass
  backend.residual_rmsnorm_forward(a.r2, a.ln2, a.rstd2, a.r2, x, p("ln2_w"), N, C, eps);
  backend.matmul_forward(a.gate_up, a.ln2, p("gate_up_w"), nullptr, N, C, 2 * I);
  backend.swiglu_forward(a.act, a.gate_up, N, I);
  backend.matmul_forward(out, a.act, p("down_w"), nullptr, N, I, C);  // MLP branch
  backend.residual_forward(out, out, a.r2, size_t(N) * C);
}

static std::string llama_shape_message(const ModelConfig& config) {
  std::string s;
  for (const std::string& p : model_shape_problems(config)) s += (s.empty() ? "" : "; ") + p;
  return s;
}

Llama::Llama(const ModelConfig& config, Backend& backend, ModelRunOptions options)
    : CausalLMBase("Llama", config, backend, options) {
  if (!config.llama()) throw std::invalid_argument("Llama: model '" + config.name + "' is not a Llama config");
  if (const std::string bad = llama_shape_message(config); !bad.empty())
    throw std::invalid_argument("Llama: model '" + config.name + "': " + bad);
  take_batch();
  const size_t es = element_bytes(), N = max_rows();
  const size_t C = size_t(config.dim), A = size_t(config.attention_width()),
               Q = size_t(config.qkv_rows()), I = size_t(config.intermediate);
  const int L = config.layers, hd = config.head_width();

  // The rotation angles of positions 0..seq_len-1: row t is the same for any shorter batch.
  const RopeTable tab = rope_table(config.seq_len, hd, config.rope_theta, config.rope_scaling);
  const size_t table_bytes = tab.cos.size() * sizeof(float);
  rope_cos_ = static_cast<float*>(take(table_bytes));
  rope_sin_ = static_cast<float*>(take(table_bytes));
  backend.copy_to_device(rope_cos_, tab.cos.data(), table_bytes);
  backend.copy_to_device(rope_sin_, tab.sin.data(), table_bytes);
  for (int i = 0; i <= L; ++i) resid_.push_back(take(N * C * es));
  const size_t saved = backend.attention_saved_bytes(options.max_batch, config.seq_len, int(A), config.heads);
  const int sets = options.checkpoint_activations ? 1 : L;
  for (int i = 0; i < sets; ++i) {
    auto a = std::make_unique<BlockActs>();
    a->ln1 = take(N * C * es);
    a->rstd1 = static_cast<float*>(take(N * 4));
    a->qkv = take(N * Q * es);
    a->att = take(saved);
    a->atty = take(N * A * es);
    a->r2 = take(N * C * es);
    a->ln2 = take(N * C * es);
    a->rstd2 = static_cast<float*>(take(N * 4));
    a->gate_up = take(N * 2 * I * es);
    a->act = take(N * I * es);
    blocks_.push_back(std::move(a));
  }
  lnf_ = take(N * C * es);
  lnf_rstd_ = static_cast<float*>(take(N * 4));
  take_head_outputs();
  dresid_ = take(N * C * es);
  dln_ = take(N * C * es);
  datty_ = take(N * A * es);
  dqkv_ = take(N * Q * es);
  dgate_up_ = take(N * 2 * I * es);
  dact_ = take(N * I * es);
  check_taken(activation_bytes_for(config, options, es, saved));
}

Llama::~Llama() = default;

size_t Llama::activation_bytes_for(const ModelConfig& config, const ModelRunOptions& options, size_t es,
                                   size_t attention_saved) {
  const size_t N = size_t(options.max_batch) * size_t(config.seq_len);
  const size_t C = size_t(config.dim), Vp = size_t(config.padded_vocab()), L = size_t(config.layers),
               A = size_t(config.attention_width()), Q = size_t(config.qkv_rows()),
               I = size_t(config.intermediate);
  const size_t rope = 2 * size_t(config.seq_len) * size_t(config.head_width() / 2) * 4;  // fp32 cos, sin
  // ln1 qkv atty r2 ln2 gate_up act, two RMSNorm rstd [N], the attention's saved state
  const size_t block_set = N * (3 * C + Q + A + 3 * I) * es + 2 * N * 4 + attention_saved;
  const size_t sets = options.checkpoint_activations ? 1 : L;
  const size_t logits = N * Vp * es * (options.keep_logits ? 2 : 1);
  return 2 * N * 4                          // tokens, targets
         + rope                             // the RoPE table
         + (L + 1) * N * C * es             // the residual stream: the embedding's and every block's output
         + sets * block_set                 // what backward reads (one set, recomputed, with checkpointing)
         + N * C * es + N * 4 + logits + N * 4  // head: final RMSNorm and its rstd, logits, losses
         + N * (2 * C + A + Q + 3 * I) * es;    // gradient scratch: dresid dln datty dqkv dgate_up dact
}

void Llama::block_forward(int l, const void* params, BlockActs& a) {
  const int B = B_, T = T_, A = int(config_.attention_width()), H = config_.heads, Hkv = config_.kv_head_count();
  llama_block_forward(backend_, config_, layouts_[size_t(l) + 1], params, resid_[size_t(l)], resid_[size_t(l) + 1], a,
                      rope_cos_, rope_sin_, B, T, [&] { backend_.attention_forward(a.atty, a.att, a.qkv, B, T, A, H, Hkv); });
}

void Llama::forward_unit(int u, const void* params, const void* embedding_params) {
  check_unit(u, params);
  const int B = B_, T = T_, C = config_.dim, N = B * T, L = config_.layers;
  const UnitLayout& lay = layouts_[size_t(u)];
  const UnitView p{lay, (char*)params, element_bytes()};
  if (lay.kind == UnitKind::Embedding) {
    backend_.embedding_forward(resid_[0], tokens_, p("wte"), nullptr, B, T, C);  // no position table
  } else if (lay.kind == UnitKind::Block) {
    const int l = u - 1;
    block_forward(l, params, *blocks_[options_.checkpoint_activations ? 0 : size_t(l)]);
  } else {
    const void* w = head_matrix(params, embedding_params, "forward");
    backend_.rmsnorm_forward(lnf_, lnf_rstd_, resid_[size_t(L)], p("lnf_w"), N, C, config_.norm_eps);
    head_forward(lnf_, w);
  }
}

void Llama::backward_unit(int u, const void* params, void* grads, const void* embedding_params,
                          void* embedding_grads) {
  check_unit(u, params);
  check_grads(u, grads);
  const int B = B_, T = T_, N = B * T, C = config_.dim, H = config_.heads, Hkv = config_.kv_head_count(),
            hd = config_.head_width(), A = int(config_.attention_width()), Q = int(config_.qkv_rows()),
            I = config_.intermediate, V = config_.vocab, Vp = config_.padded_vocab(), L = config_.layers;
  const size_t es = dtype_size(backend_.act_dtype());
  const size_t n = size_t(N);
  const UnitLayout& lay = layouts_[size_t(u)];
  const UnitView p{lay, (char*)params, es};
  const UnitView g{lay, (char*)grads, es};
  if (lay.kind == UnitKind::Head) {
    const void* w = head_matrix(params, embedding_params, "backward");
    void* dw = head_matrix_grad(grads, embedding_grads);
    backend_.zero(dln_, n * C * es);
    backend_.lm_head_backward(dln_, dw, logits_, lnf_, w, N, C, V, Vp);  // logits_ holds dlogits now
    backend_.zero(dresid_, n * C * es);
    backend_.rmsnorm_backward(dresid_, g("lnf_w"), dln_, resid_[size_t(L)], p("lnf_w"), lnf_rstd_, N, C);
  } else if (lay.kind == UnitKind::Block) {
    const int l = u - 1;
    BlockActs& a = *blocks_[options_.checkpoint_activations ? 0 : size_t(l)];
    if (options_.checkpoint_activations) block_forward(l, params, a);
    const void* x = resid_[size_t(l)];
    // dresid_ holds d(block output); it becomes d(block input) by accumulation through both branches.
    backend_.zero(dact_, n * I * es);
    backend_.matmul_backward(dact_, g("down_w"), nullptr, dresid_, a.act, p("down_w"), N, I, C);
    backend_.zero(dgate_up_, n * 2 * I * es);
    backend_.swiglu_backward(dgate_up_, dact_, a.gate_up, N, I);
    backend_.zero(dln_, n * C * es);
    backend_.matmul_backward(dln_, g("gate_up_w"), nullptr, dgate_up_, a.ln2, p("gate_up_w"), N, C, 2 * I);
    backend_.rmsnorm_backward(dresid_, g("ln2_w"), dln_, a.r2, p("ln2_w"), a.rstd2, N, C);
    backend_.zero(datty_, n * A * es);
    backend_.matmul_backward(datty_, g("attproj_w"), nullptr, dresid_, a.atty, p("attproj_w"), N, A, C);
    backend_.zero(dqkv_, n * Q * es);
    backend_.attention_backward(dqkv_, datty_, a.qkv, a.att, B, T, A, H, Hkv);
    // d(rotated q, k) -> d(q, k) before the projection's backward; v's columns are untouched
    backend_.rope_backward(dqkv_, rope_cos_, rope_sin_, B, T, H + Hkv, hd, Q);
    backend_.zero(dln_, n * C * es);
    backend_.matmul_backward(dln_, g("qkv_w"), nullptr, dqkv_, a.ln1, p("qkv_w"), N, C, Q);
    backend_.rmsnorm_backward(dresid_, g("ln1_w"), dln_, x, p("ln1_w"), a.rstd1, N, C);
  } else {
    backend_.embedding_backward(g("wte"), nullptr, dresid_, tokens_, B, T, C);
  }
}

}  // namespace zt
