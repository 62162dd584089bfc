// GPT2 forward and backward, one unit per call: embedding, pre-LN blocks (attention + GELU MLP),
// and the head (final LayerNorm, LM head, softmax cross-entropy), with optional block recompute.
#include "runtime/model/gpt2.h"

#include "runtime/model/gpt2_block.h"

#include <stdexcept>
#include <string>

namespace zt {

struct GPT2::BlockActs : BlockForwardBuffers {
  void* att = nullptr;  // what the attention's backward needs (attention_saved_bytes)
};

void gpt2_block_forward(Backend& backend, const UnitLayout& layout, const void* params, const void* x, void* out,
                        const BlockForwardBuffers& a, int N, int C, const std::function<void()>& attention) {
  const UnitView p{layout, (char*)params, dtype_size(backend.act_dtype())};
  backend.layernorm_forward(a.ln1, a.ln1_mean, a.ln1_rstd, x, p("ln1_w"), p("ln1_b"), N, C);
  backend.matmul_forward(a.qkv, a.ln1, p("qkv_w"), p("qkv_b"), N, C, 3 * C);
  attention();
  backend.matmul_forward(a.r2, a.atty, p("attproj_w"), p("attproj_b"), N, C, C);  // attention branch
  // r2 = x + attention branch, and ln2 = LayerNorm(r2), in one pass
  backend.residual_layernorm_forward(a.r2, a.ln2, a.ln2_mean, a.ln2_rstd, a.r2, x, p("ln2_w"), p("ln2_b"), N, C);
  backend.matmul_bias_gelu_forward(a.fch_gelu, a.fch, a.ln2, p("fc_w"), p("fc_b"), N, C, 4 * C);
  backend.matmul_forward(out, a.fch_gelu, p("fcproj_w"), p("fcproj_b"), N, 4 * C, C);  // MLP branch
  backend.residual_forward(out, out, a.r2, size_t(N) * C);
}

GPT2::GPT2(const ModelConfig& config, Backend& backend, ModelRunOptions options)
    : CausalLMBase("GPT2", config, backend, options) {
  if (config.dim % config.heads != 0)
    throw std::invalid_argument("model dim " + std::to_string(config.dim) + " does not divide by heads " +
                                std::to_string(config.heads));
  take_batch();
  const size_t es = element_bytes(), N = max_rows(), C = size_t(config.dim);
  const int L = config.layers;

  for (int i = 0; i <= L; ++i) resid_.push_back(take(N * C * es));
  const int sets = options.checkpoint_activations ? 1 : L;
  for (int i = 0; i < sets; ++i) {
    auto a = std::make_unique<BlockActs>();
    a->ln1 = take(N * C * es);
    a->ln1_mean = static_cast<float*>(take(N * 4));
    a->ln1_rstd = static_cast<float*>(take(N * 4));
    a->qkv = take(N * 3 * C * es);
    a->att = take(backend.attention_saved_bytes(options.max_batch, config.seq_len, config.dim, config.heads));
    a->atty = take(N * C * es);
    a->r2 = take(N * C * es);
    a->ln2 = take(N * C * es);
    a->ln2_mean = static_cast<float*>(take(N * 4));
    a->ln2_rstd = static_cast<float*>(take(N * 4));
    a->fch = take(N * 4 * C * es);
    a->fch_gelu = take(N * 4 * C * es);
    blocks_.push_back(std::move(a));
  }
  lnf_ = take(N * C * es);
  lnf_mean_ = static_cast<float*>(take(N * 4));
  lnf_rstd_ = static_cast<float*>(take(N * 4));
  take_head_outputs();
  dresid_ = take(N * C * es);
  dln_ = take(N * C * es);
  datty_ = take(N * C * es);
  dqkv_ = take(N * 3 * C * es);
  dfch_ = take(N * 4 * C * es);
  check_taken(activation_bytes_for(
      config, options, es, backend.attention_saved_bytes(options.max_batch, config.seq_len, config.dim, config.heads)));
}

GPT2::~GPT2() = default;

size_t GPT2::activation_bytes_for(const ModelConfig& config, const ModelRunOptions& options, size_t es,
                                  size_t attention_saved) {
  const size_t N = size_t(options.max_batch) * size_t(config.seq_len);
  const size_t C = size_t(config.dim), Vp = size_t(config.padded_vocab()), L = size_t(config.layers);
  const size_t stats = 2 * N * 4;  // a LayerNorm's fp32 mean and rstd
  const size_t block_set = 15 * N * C * es + 2 * stats + attention_saved;  // ln1 qkv atty r2 ln2 fch fch_gelu
  const size_t sets = options.checkpoint_activations ? 1 : L;
  const size_t logits = N * Vp * es * (options.keep_logits ? 2 : 1);
  return 2 * N * 4                   // tokens, targets
         + (L + 1) * N * C * es      // the residual stream: the embedding's and every block's output
         + sets * block_set          // what backward reads (one set, recomputed, with checkpointing)
         + N * C * es + stats + logits + N * 4  // head: final LayerNorm, logits (padded vocab), losses
         + 10 * N * C * es;          // gradient scratch: dresid dln datty, dqkv 3C, dfch 4C
}

void GPT2::block_forward(int l, const void* params, BlockActs& a) {
  const int B = B_, T = T_, C = config_.dim, NH = config_.heads;
  gpt2_block_forward(backend_, layouts_[size_t(l) + 1], params, resid_[size_t(l)], resid_[size_t(l) + 1], a, B * T, C,
                     [&] { backend_.attention_forward(a.atty, a.att, a.qkv, B, T, C, NH); });
}

void GPT2::forward_unit(int u, const void* params, const void* embedding_params) {
  check_unit(u, params);
  const int B = B_, T = T_, C = config_.dim, N = B * T, L = config_.layers;
  const UnitLayout& lay = layouts_[size_t(u)];
  const UnitView p{lay, (char*)params, element_bytes()};
  if (lay.kind == UnitKind::Embedding) {
    backend_.embedding_forward(resid_[0], tokens_, p("wte"), p("wpe"), B, T, C);
  } else if (lay.kind == UnitKind::Block) {
    const int l = u - 1;
    block_forward(l, static_cast<const float*>(params), *blocks_[options_.checkpoint_activations ? 0 : size_t(l)]);
  } else {
    const void* wte = head_matrix(params, embedding_params, "forward");
    backend_.layernorm_forward(lnf_, lnf_mean_, lnf_rstd_, resid_[size_t(L)], p("lnf_w"), p("lnf_b"), N, C);
    head_forward(lnf_, wte);
  }
}

void GPT2::backward_unit(int u, const void* params, void* grads, const void* embedding_params,
                         void* embedding_grads) {
  check_unit(u, params);
  check_grads(u, grads);
  const int B = B_, T = T_, C = config_.dim, NH = config_.heads, V = config_.vocab, Vp = config_.padded_vocab(),
            N = B * T, L = config_.layers;
  const size_t es = dtype_size(backend_.act_dtype());
  const size_t NC = size_t(N) * C;
  const UnitLayout& lay = layouts_[size_t(u)];
  const UnitView p{lay, (char*)params, es};
  const UnitView g{lay, (char*)grads, es};
  if (lay.kind == UnitKind::Head) {
    const void* wte = head_matrix(params, embedding_params, "backward");
    void* dwte = head_matrix_grad(grads, embedding_grads);
    backend_.zero(dln_, NC * es);
    backend_.lm_head_backward(dln_, dwte, logits_, lnf_, wte, N, C, V, Vp);  // logits_ holds dlogits now
    backend_.zero(dresid_, NC * es);
    backend_.layernorm_backward(dresid_, g("lnf_w"), g("lnf_b"), dln_, resid_[size_t(L)], p("lnf_w"), lnf_mean_,
                                lnf_rstd_, N, C);
  } else if (lay.kind == UnitKind::Block) {
    const int l = u - 1;
    BlockActs& a = *blocks_[options_.checkpoint_activations ? 0 : size_t(l)];
    if (options_.checkpoint_activations) block_forward(l, static_cast<const float*>(params), a);
    const void* x = resid_[size_t(l)];
    // dresid_ holds d(block output); it becomes d(block input) by accumulation through both branches.
    // fcproj's backward with the GELU's: dfch = (dresid · W) ∘ gelu'(fch), written (not added)
    backend_.matmul_backward_gelu(dfch_, g("fcproj_w"), g("fcproj_b"), dresid_, a.fch_gelu, a.fch, p("fcproj_w"), N,
                                  4 * C, C);
    backend_.zero(dln_, NC * es);
    backend_.matmul_backward(dln_, g("fc_w"), g("fc_b"), dfch_, a.ln2, p("fc_w"), N, C, 4 * C);
    backend_.layernorm_backward(dresid_, g("ln2_w"), g("ln2_b"), dln_, a.r2, p("ln2_w"), a.ln2_mean, a.ln2_rstd,
                                N, C);
    backend_.zero(datty_, NC * es);
    backend_.matmul_backward(datty_, g("attproj_w"), g("attproj_b"), dresid_, a.atty, p("attproj_w"), N, C, C);
    backend_.zero(dqkv_, NC * 3 * es);
    backend_.attention_backward(dqkv_, datty_, a.qkv, a.att, B, T, C, NH);
    backend_.zero(dln_, NC * es);
    backend_.matmul_backward(dln_, g("qkv_w"), g("qkv_b"), dqkv_, a.ln1, p("qkv_w"), N, C, 3 * C);
    backend_.layernorm_backward(dresid_, g("ln1_w"), g("ln1_b"), dln_, x, p("ln1_w"), a.ln1_mean, a.ln1_rstd, N,
                                C);
  } else {
    backend_.embedding_backward(g("wte"), g("wpe"), dresid_, tokens_, B, T, C);
  }
}

}  // namespace zt
