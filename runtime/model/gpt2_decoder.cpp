// GPT2Decoder: the new rows through GPT-2's embedding, blocks and final LayerNorm against the cache.
#include "runtime/model/gpt2_decoder.h"

#include <utility>

namespace zt {

GPT2Decoder::GPT2Decoder(const ModelConfig& config, Backend& backend, std::vector<const void*> unit_params,
                         int max_len)
    : Decoder("GPT2Decoder", config, backend, std::move(unit_params), max_len) {
  const size_t es = element_bytes();
  const size_t rows = size_t(max_len), C = size_t(config.dim);
  for (int l = 0; l < config.layers; ++l) qkv_cache_.push_back(take_cache(rows * 3 * C * es));
  acts_.ln1 = take(rows * C * es);
  acts_.atty = take(rows * C * es);
  acts_.r2 = take(rows * C * es);
  acts_.ln2 = take(rows * C * es);
  acts_.fch = take(rows * 4 * C * es);
  acts_.fch_gelu = take(rows * 4 * C * es);
  for (float** stat : {&acts_.ln1_mean, &acts_.ln1_rstd, &acts_.ln2_mean, &acts_.ln2_rstd})
    *stat = static_cast<float*>(take(rows * sizeof(float)));
  attention_saved_ = take(backend.attention_saved_bytes(1, max_len, config.dim, config.heads));
  x_ = take(rows * C * es);
  y_ = take(rows * C * es);
  lnf_ = take(C * es);
  lnf_mean_ = static_cast<float*>(take(sizeof(float)));
  lnf_rstd_ = static_cast<float*>(take(sizeof(float)));
}

const void* GPT2Decoder::forward_rows(int first, int n) {
  const int C = config_.dim, L = config_.layers;
  const size_t es = element_bytes();
  // Embedding: the new rows' token rows plus the position rows first.. (wpe from row `first` on).
  const UnitView embedding = unit(0);
  backend_.embedding_forward(x_, tokens_, embedding("wte"), (char*)embedding("wpe") + size_t(first) * C * es, 1, n, C);
  void* x = x_;
  void* y = y_;
  for (int l = 0; l < L; ++l) {
    BlockForwardBuffers a = acts_;
    char* cache = static_cast<char*>(qkv_cache_[size_t(l)]);
    a.qkv = cache + size_t(first) * 3 * C * es;  // the new rows' q, k, v land in the cache
    gpt2_block_forward(backend_, layouts_[size_t(l) + 1], params_[size_t(l) + 1], x, y, a, n, C,
                       [&] { cached_attention(a.atty, attention_saved_, cache, first, n); });
    std::swap(x, y);
  }
  const UnitView head = unit(L + 1);
  const void* last = static_cast<char*>(x) + size_t(n - 1) * C * es;
  backend_.layernorm_forward(lnf_, lnf_mean_, lnf_rstd_, last, head("lnf_w"), head("lnf_b"), 1, C);
  return lnf_;
}

}  // namespace zt
