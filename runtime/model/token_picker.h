// TokenPicker: the next token from a position's logits — greedy (temperature 0), or a draw from
// softmax(logits / temperature) over the top_k largest (0: all), with its own seeded generator so
// that a seed gives the same tokens on every machine and backend's logits rounding aside.
#pragma once

#include <cstdint>
#include <vector>

namespace zt {

struct SamplingOptions {
  double temperature = 1.0;  // 0: greedy (argmax; ties go to the lowest id)
  int top_k = 0;             // keep the k most likely tokens (0: every token)
  uint64_t seed = 1;
  int vocab_limit = 0;       // draw only ids below this (a tokenizer smaller than the model's vocabulary; 0: all)
};

class TokenPicker {
 public:
  explicit TokenPicker(const SamplingOptions& o);  // throws std::invalid_argument for negative values
  int32_t pick(const std::vector<float>& logits);

 private:
  double uniform();  // [0, 1), 53 bits of a splitmix64 stream
  SamplingOptions o_;
  uint64_t state_;
  std::vector<int32_t> order_;
  std::vector<double> weights_;
};

}  // namespace zt
