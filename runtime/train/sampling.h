// Sampling from whole fp32 weights, for `zerotrain sample` and the training run's --sample-every:
// the weights put on a backend in its working type, the family's decoder over them, and TextCodec, which
// turns prompts into ids and ids into what is printed (tokenizer text, raw bytes, or ids).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "runtime/data/bpe_tokenizer.h"
#include "runtime/model/model_config.h"
#include "runtime/model/token_picker.h"

namespace zt {

struct TextCodec {
  std::unique_ptr<BpeTokenizer> tokenizer;  // null: bytes are token ids (byte-level data)
  bool ids_out = false;                      // print " 17 4 9" instead of text

  // A prompt's ids: with a tokenizer, with its post-processor's special tokens (Llama-2's <s> first),
  // as a tokenizer called in transformers gives them.
  std::vector<int32_t> encode(const std::string& text) const;
  std::string decode_prompt(const std::vector<int32_t>& ids) const;  // as the start of a text
  std::string decode(int32_t id) const;  // one generated id after the text before it; without a tokenizer an id >= 256 prints as [id]
  std::optional<int32_t> start_of_text() const;  // the tokenizer's document token (<|endoftext|>, <s>, ...)
  std::optional<int32_t> end_of_text() const;    // the tokenizer's end token (<|endoftext|>, </s>, ...)
};

struct SampleRequest {
  std::vector<int32_t> prompt;
  int tokens = 64;
  SamplingOptions sampling;
  std::optional<int32_t> stop;  // stop after this token
};

struct SampleResult {
  std::vector<int32_t> tokens;
  double seconds = 0;     // generation, prompt included, weights' upload excluded
  size_t cache_bytes = 0;
};

// units[u]: unit u's fp32 values in the model's layout. The prompt and tokens must fit the model's
// context. `each` sees every new token as it is picked.
SampleResult sample_from_weights(const ModelConfig& model, Backend& backend, const std::vector<std::vector<float>>& units,
                                 const SampleRequest& request, const std::function<void(int32_t)>& each = nullptr);

}  // namespace zt
