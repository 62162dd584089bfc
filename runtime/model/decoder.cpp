// Decoder: the checks, the head's logits and the cache's attention for every family; the factory by
// family; generate().
#include "runtime/model/decoder.h"

#include <stdexcept>
#include <utility>

#include "runtime/model/gpt2_decoder.h"
#include "runtime/model/llama_decoder.h"

namespace zt {

Decoder::Decoder(const char* family, const ModelConfig& config, Backend& backend, std::vector<const void*> unit_params,
                 int max_len)
    : family_(family), config_(config), backend_(backend), layouts_(build_unit_layouts(config)),
      params_(std::move(unit_params)), max_len_(max_len) {
  if (max_len < 1 || max_len > config.seq_len)
    throw std::invalid_argument(family_ + ": max_len " + std::to_string(max_len) + " outside 1.." +
                                std::to_string(config.seq_len) + " (the model's context)");
  if (params_.size() != layouts_.size())
    throw std::invalid_argument(family_ + ": " + std::to_string(params_.size()) + " parameter buffers for " +
                                std::to_string(layouts_.size()) + " units");
  tokens_ = static_cast<int32_t*>(take(size_t(max_len) * sizeof(int32_t)));
  logits_ = take(size_t(config.padded_vocab()) * element_bytes());
}

Decoder::~Decoder() {
  for (void* p : allocations_) backend_.free(p);
}

void* Decoder::take(size_t bytes) {
  void* p = backend_.alloc(bytes);
  allocations_.push_back(p);
  return p;
}

void* Decoder::take_cache(size_t bytes) {
  cache_bytes_ += bytes;
  return take(bytes);
}

void Decoder::check_tokens(const int32_t* tokens, int n) const {
  if (length_ + n > max_len_)
    throw std::length_error(family_ + ": " + std::to_string(length_ + n) + " positions exceed max_len " +
                            std::to_string(max_len_));
  for (int i = 0; i < n; ++i)
    if (tokens[i] < 0 || tokens[i] >= config_.vocab)
      throw std::invalid_argument(family_ + ": token id " + std::to_string(tokens[i]) + " at position " +
                                  std::to_string(length_ + i) + " outside the vocabulary 0.." +
                                  std::to_string(config_.vocab - 1));
}

std::vector<float> Decoder::prefill(const std::vector<int32_t>& prompt) {
  if (prompt.empty()) throw std::invalid_argument(family_ + ": an empty prompt (give at least one token)");
  length_ = 0;
  return run(prompt.data(), int(prompt.size()));
}

std::vector<float> Decoder::append(int32_t token) {
  if (length_ == 0) throw std::logic_error(family_ + ": append() before prefill()");
  return run(&token, 1);
}

void Decoder::cached_attention(void* out, void* saved, const void* cache, int first, int n) const {
  const int A = int(config_.attention_width()), H = config_.heads, Hkv = config_.kv_head_count();
  if (first == 0)
    backend_.attention_forward(out, saved, cache, 1, n, A, H, Hkv);  // the whole prompt, causal
  else if (n == 1)
    backend_.attention_decode(out, cache, 1, max_len_, first + 1, A, H, Hkv);
  else
    throw std::logic_error(family_ + ": several new positions after the prompt");
}

std::vector<float> Decoder::run(const int32_t* tokens, int n) {
  check_tokens(tokens, n);
  const int C = config_.dim, V = config_.vocab, Vp = config_.padded_vocab();
  const int first = length_;  // position of the first new row
  backend_.copy_to_device(tokens_, tokens, size_t(n) * sizeof(int32_t));
  const void* normed = forward_rows(first, n);
  // The head over the last row only: tied to the embedding's token matrix or its own.
  const void* w = config_.tied_embeddings ? unit(0)("wte") : unit(int(layouts_.size()) - 1)("lm_head_w");
  backend_.lm_head_forward(logits_, normed, w, 1, C, V, Vp);
  std::vector<float> logits(static_cast<size_t>(Vp));
  backend_.act_to_f32(logits.data(), logits_, size_t(Vp));
  backend_.synchronize();
  logits.resize(size_t(V));
  length_ = first + n;
  return logits;
}

std::unique_ptr<Decoder> make_decoder(const ModelConfig& config, Backend& backend,
                                      std::vector<const void*> unit_params, int max_len) {
  if (config.llama()) return std::make_unique<LlamaDecoder>(config, backend, std::move(unit_params), max_len);
  return std::make_unique<GPT2Decoder>(config, backend, std::move(unit_params), max_len);
}

std::vector<int32_t> generate(Decoder& decoder, TokenPicker& picker, const std::vector<int32_t>& prompt, int count,
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
