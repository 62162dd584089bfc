// GPT2Decoder: the prompt through the training ops, then one position at a time against the cache.
#include "runtime/model/gpt2_decoder.h"

#include <stdexcept>
#include <string>
#include <utility>

namespace zt {

void* GPT2Decoder::take(size_t bytes) {
  void* p = backend_.alloc(bytes);
  allocations_.push_back(p);
  return p;
}

GPT2Decoder::GPT2Decoder(const ModelConfig& config, Backend& backend, std::vector<const void*> unit_params,
                         int max_len)
    : config_(config), backend_(backend), layouts_(build_unit_layouts(config)), params_(std::move(unit_params)),
      max_len_(max_len) {
  if (max_len < 1 || max_len > config.seq_len)
    throw std::invalid_argument("GPT2Decoder: max_len " + std::to_string(max_len) + " outside 1.." +
                                std::to_string(config.seq_len) + " (the model's context)");
  if (params_.size() != layouts_.size())
    throw std::invalid_argument("GPT2Decoder: " + std::to_string(params_.size()) + " parameter buffers for " +
                                std::to_string(layouts_.size()) + " units");
  const size_t es = dtype_size(backend.act_dtype());
  const size_t rows = size_t(max_len), C = size_t(config.dim);
  for (int l = 0; l < config.layers; ++l) qkv_cache_.push_back(take(rows * 3 * C * es));
  cache_bytes_ = size_t(config.layers) * rows * 3 * C * es;
  acts_.ln1 = take(rows * C * es);
  acts_.atty = take(rows * C * es);
  acts_.r2 = take(rows * C * es);
  acts_.ln2 = take(rows * C * es);
  acts_.fch = take(rows * 4 * C * es);
  acts_.fch_gelu = take(rows * 4 * C * es);
  for (float** stat : {&acts_.ln1_mean, &acts_.ln1_rstd, &acts_.ln2_mean, &acts_.ln2_rstd})
    *stat = static_cast<float*>(take(rows * sizeof(float)));
  attention_saved_ = take(backend.attention_saved_bytes(1, max_len, config.dim, config.heads));
  tokens_ = static_cast<int32_t*>(take(rows * sizeof(int32_t)));
  x_ = take(rows * C * es);
  y_ = take(rows * C * es);
  lnf_ = take(C * es);
  lnf_mean_ = static_cast<float*>(take(sizeof(float)));
  lnf_rstd_ = static_cast<float*>(take(sizeof(float)));
  logits_ = take(size_t(config.padded_vocab()) * es);
}

GPT2Decoder::~GPT2Decoder() {
  for (void* p : allocations_) backend_.free(p);
}

void GPT2Decoder::check_tokens(const int32_t* tokens, int n) const {
  if (length_ + n > max_len_)
    throw std::length_error("GPT2Decoder: " + std::to_string(length_ + n) + " positions exceed max_len " +
                            std::to_string(max_len_));
  for (int i = 0; i < n; ++i)
    if (tokens[i] < 0 || tokens[i] >= config_.vocab)
      throw std::invalid_argument("GPT2Decoder: token id " + std::to_string(tokens[i]) + " at position " +
                                  std::to_string(length_ + i) + " outside the vocabulary 0.." +
                                  std::to_string(config_.vocab - 1));
}

std::vector<float> GPT2Decoder::prefill(const std::vector<int32_t>& prompt) {
  if (prompt.empty()) throw std::invalid_argument("GPT2Decoder: an empty prompt (give at least one token)");
  length_ = 0;
  return run(prompt.data(), int(prompt.size()));
}

std::vector<float> GPT2Decoder::append(int32_t token) {
  if (length_ == 0) throw std::logic_error("GPT2Decoder: append() before prefill()");
  return run(&token, 1);
}

std::vector<float> GPT2Decoder::run(const int32_t* tokens, int n) {
  check_tokens(tokens, n);
  const int C = config_.dim, NH = config_.heads, V = config_.vocab, Vp = config_.padded_vocab(), L = config_.layers;
  const size_t es = dtype_size(backend_.act_dtype());
  const int first = length_;  // position of the first new row
  backend_.copy_to_device(tokens_, tokens, size_t(n) * sizeof(int32_t));
  // Embedding: the new rows' token rows plus the position rows first.. (wpe from row `first` on).
  const UnitView embedding{layouts_[0], (char*)params_[0], es};
  backend_.embedding_forward(x_, tokens_, embedding("wte"), (char*)embedding("wpe") + size_t(first) * C * es, 1, n, C);
  void* x = x_;
  void* y = y_;
  for (int l = 0; l < L; ++l) {
    BlockForwardBuffers a = acts_;
    char* cache = static_cast<char*>(qkv_cache_[size_t(l)]);
    a.qkv = cache + size_t(first) * 3 * C * es;  // the new rows' q, k, v land in the cache
    gpt2_block_forward(backend_, layouts_[size_t(l) + 1], params_[size_t(l) + 1], x, y, a, n, C, [&] {
      if (first == 0)
        backend_.attention_forward(a.atty, attention_saved_, cache, 1, n, C, NH);  // the whole prompt, causal
      else if (n == 1)
        backend_.attention_decode(a.atty, cache, 1, max_len_, first + 1, C, NH);
      else
        throw std::logic_error("GPT2Decoder: several new positions after the prompt");
    });
    std::swap(x, y);
  }
  // Head: the last row only.
  const UnitLayout& head = layouts_[size_t(L) + 1];
  const UnitView hp{head, (char*)params_[size_t(L) + 1], es};
  const void* wte = config_.tied_embeddings ? embedding("wte") : hp("lm_head_w");
  const void* last = static_cast<char*>(x) + size_t(n - 1) * C * es;
  backend_.layernorm_forward(lnf_, lnf_mean_, lnf_rstd_, last, hp("lnf_w"), hp("lnf_b"), 1, C);
  backend_.lm_head_forward(logits_, lnf_, wte, 1, C, V, Vp);
  std::vector<float> logits(static_cast<size_t>(Vp));
  backend_.act_to_f32(logits.data(), logits_, size_t(Vp));
  backend_.synchronize();
  logits.resize(size_t(V));
  length_ = first + n;
  return logits;
}

std::vector<int32_t> generate(GPT2Decoder& decoder, TokenPicker& picker, const std::vector<int32_t>& prompt, int count,
                              std::optional<int32_t> stop, const std::function<void(int32_t)>& each) {
  std::vector<int32_t> out;
  if (count <= 0) return out;
  std::vector<float> logits = decoder.prefill(prompt);
  for (int i = 0; i < count; ++i) {
    const int32_t token = picker.pick(logits);
    out.push_back(token);
    if (each) each(token);
    if ((stop && token == *stop) || i + 1 == count) break;
    logits = decoder.append(token);
  }
  return out;
}

}  // namespace zt
