// Decoder: a causal LM's forward for generation, with a key/value cache, the same for every family.
// prefill(prompt) runs the prompt's positions together (the training forward's ops over P rows, each
// block's q, k, v written into its cache); append(token) runs one new position (attention_decode
// against the cache). Each returns the last position's logits on the host. A family (GPT2Decoder,
// LlamaDecoder) adds its blocks' buffers and its forward of new rows; make_decoder picks it by the
// config, and generate() drives any of them. Parameters are whole units in backend memory,
// act_dtype values laid out as the model's unit layouts (what Engine or an import holds).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "runtime/model/model_config.h"
#include "runtime/model/token_picker.h"
#include "runtime/model/unit_layout.h"

namespace zt {

class Decoder {
 public:
  virtual ~Decoder();  // frees every allocation
  Decoder(const Decoder&) = delete;
  Decoder& operator=(const Decoder&) = delete;

  // Starts a sequence: 1 <= prompt.size() <= max_len, ids < vocab. Returns the logits (vocab floats)
  // that predict the token after the prompt.
  std::vector<float> prefill(const std::vector<int32_t>& prompt);
  // Appends one token (length() < max_len) and returns the logits that predict the next.
  std::vector<float> append(int32_t token);
  int length() const { return length_; }
  int max_len() const { return max_len_; }
  // The key/value caches' bytes (every block's cached rows: q, k and v as attention's packing, the
  // key/value part NKV heads wide).
  size_t cache_bytes() const { return cache_bytes_; }

 protected:
  // unit_params[u]: unit u's parameters (the model's walk order). 1 <= max_len <= config.seq_len:
  // the longest sequence (prompt and generated tokens) the cache holds. `family` names the class in
  // messages ("GPT2Decoder", "LlamaDecoder").
  Decoder(const char* family, const ModelConfig& config, Backend& backend, std::vector<const void*> unit_params,
          int max_len);

  // `bytes` of backend memory held until the decoder is destroyed; take_cache also counts them in
  // cache_bytes().
  void* take(size_t bytes);
  void* take_cache(size_t bytes);
  UnitView unit(int u) const { return UnitView{layouts_[size_t(u)], (char*)params_[size_t(u)], element_bytes()}; }
  size_t element_bytes() const { return dtype_size(backend_.act_dtype()); }
  // The attention of the new rows [first, first + n) of one block whose q, k, v are cached in
  // `cache` (max_len rows): the causal forward over the prompt (first == 0, `saved` its scratch), or
  // one position against the cache (n == 1). out [n, H·hd].
  void cached_attention(void* out, void* saved, const void* cache, int first, int n) const;
  // The family's forward of the new rows [first, first + n), their ids in tokens_ on the backend:
  // the embedding, every block (writing each block's q, k, v into its cache) and the final norm of
  // the last row. Returns that normed row [1, C] in backend memory.
  virtual const void* forward_rows(int first, int n) = 0;

  std::string family_;
  ModelConfig config_;
  Backend& backend_;
  std::vector<UnitLayout> layouts_;
  std::vector<const void*> params_;
  int max_len_;
  int32_t* tokens_ = nullptr;  // [max_len] on the backend: the new rows' ids

 private:
  void check_tokens(const int32_t* tokens, int n) const;
  // Runs positions [length_, length_ + n); the last row's logits to the host.
  std::vector<float> run(const int32_t* tokens, int n);

  int length_ = 0;
  std::vector<void*> allocations_;
  size_t cache_bytes_ = 0;
  void* logits_ = nullptr;  // [padded_vocab]
};

// The decoder of config's family over `unit_params` (see Decoder's constructor).
std::unique_ptr<Decoder> make_decoder(const ModelConfig& config, Backend& backend,
                                      std::vector<const void*> unit_params, int max_len);

// Up to `count` tokens after `prompt` (the cache's max_len bounds prompt + count), each passed to
// `each` as it is picked; stops after `stop` when it is picked. Returns the generated tokens.
std::vector<int32_t> generate(Decoder& decoder, TokenPicker& picker, const std::vector<int32_t>& prompt, int count,
                              std::optional<int32_t> stop = std::nullopt,
                              const std::function<void(int32_t)>& each = nullptr);

}  // namespace zt
