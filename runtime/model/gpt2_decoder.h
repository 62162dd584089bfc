// GPT2Decoder: GPT-2's forward for generation, with a key/value cache. prefill(prompt) runs the
// prompt's positions together (the training forward's ops over P rows, each block's q, k, v written
// into its cache); append(token) runs one new position (attention_decode against the cache). Each
// returns the last position's logits on the host. Parameters are whole units in backend memory,
// act_dtype values laid out as the model's unit layouts (what Engine or an import holds).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "kernels/backend.h"
#include "runtime/model/gpt2_block.h"
#include "runtime/model/model_config.h"
#include "runtime/model/token_picker.h"
#include "runtime/model/unit_layout.h"

namespace zt {

class GPT2Decoder {
 public:
  // unit_params[u]: unit u's parameters (the model's walk order). max_len <= config.seq_len: the
  // longest sequence (prompt and generated tokens) the cache holds.
  GPT2Decoder(const ModelConfig& config, Backend& backend, std::vector<const void*> unit_params, int max_len);
  ~GPT2Decoder();
  GPT2Decoder(const GPT2Decoder&) = delete;
  GPT2Decoder& operator=(const GPT2Decoder&) = delete;

  // Starts a sequence: 1 <= prompt.size() <= max_len, ids < vocab. Returns the logits (vocab floats)
  // that predict the token after the prompt.
  std::vector<float> prefill(const std::vector<int32_t>& prompt);
  // Appends one token (length() < max_len) and returns the logits that predict the next.
  std::vector<float> append(int32_t token);
  int length() const { return length_; }
  int max_len() const { return max_len_; }
  size_t cache_bytes() const { return cache_bytes_; }

 private:
  void* take(size_t bytes);
  void check_tokens(const int32_t* tokens, int n) const;
  // Runs positions [length_, length_ + n) through every unit; the last row's logits to the host.
  std::vector<float> run(const int32_t* tokens, int n);

  ModelConfig config_;
  Backend& backend_;
  std::vector<UnitLayout> layouts_;
  std::vector<const void*> params_;
  int max_len_;
  int length_ = 0;
  std::vector<void*> allocations_;
  size_t cache_bytes_ = 0;
  std::vector<void*> qkv_cache_;  // per block: [max_len, 3C], q, k, v of every position so far
  BlockForwardBuffers acts_;      // max_len rows; acts_.qkv points into the cache per block
  void* attention_saved_ = nullptr;
  int32_t* tokens_ = nullptr;
  void *x_ = nullptr, *y_ = nullptr, *lnf_ = nullptr, *logits_ = nullptr;
  float *lnf_mean_ = nullptr, *lnf_rstd_ = nullptr;
};

// Up to `count` tokens after `prompt` (the cache's max_len bounds prompt + count), each passed to
// `each` as it is picked; stops after `stop` when it is picked. Returns the generated tokens.
std::vector<int32_t> generate(GPT2Decoder& decoder, TokenPicker& picker, const std::vector<int32_t>& prompt, int count,
                              std::optional<int32_t> stop = std::nullopt,
                              const std::function<void(int32_t)>& each = nullptr);

}  // namespace zt
