// TokenPicker: the candidates in descending logit order (ties by id), their weights
// exp((logit - max) / temperature) in double, and one uniform draw against the running sum.
#include "runtime/model/token_picker.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

namespace zt {

TokenPicker::TokenPicker(const SamplingOptions& o) : o_(o), state_(o.seed) {
  if (!(o.temperature >= 0) || !std::isfinite(o.temperature))
    throw std::invalid_argument("temperature " + std::to_string(o.temperature) + " must be a number >= 0");
  if (o.top_k < 0) throw std::invalid_argument("top-k " + std::to_string(o.top_k) + " must be >= 0");
  if (o.vocab_limit < 0) throw std::invalid_argument("vocab_limit " + std::to_string(o.vocab_limit) + " must be >= 0");
}

double TokenPicker::uniform() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return double(z >> 11) * 0x1.0p-53;
}

int32_t TokenPicker::pick(const std::vector<float>& logits) {
  if (logits.empty()) throw std::invalid_argument("TokenPicker: no logits");
  const auto by_logit = [&](int32_t a, int32_t b) {
    return logits[size_t(a)] > logits[size_t(b)] || (logits[size_t(a)] == logits[size_t(b)] && a < b);
  };
  const size_t n = o_.vocab_limit > 0 ? std::min(logits.size(), size_t(o_.vocab_limit)) : logits.size();
  if (o_.temperature == 0)
    return int32_t(std::min_element(logits.begin(), logits.begin() + std::ptrdiff_t(n),
                                    [](float a, float b) { return a > b; }) - logits.begin());
  const size_t keep = o_.top_k > 0 ? std::min(n, size_t(o_.top_k)) : n;
  order_.resize(n);
  std::iota(order_.begin(), order_.end(), 0);
  std::partial_sort(order_.begin(), order_.begin() + std::ptrdiff_t(keep), order_.end(), by_logit);
  const double top = logits[size_t(order_[0])];
  weights_.resize(keep);
  double total = 0;
  for (size_t i = 0; i < keep; ++i) total += weights_[i] = std::exp((double(logits[size_t(order_[i])]) - top) / o_.temperature);
  const double target = uniform() * total;
  double running = 0;
  for (size_t i = 0; i < keep; ++i) {
    running += weights_[i];
    if (target < running) return order_[i];
  }
  return order_[keep - 1];  // rounding put the draw at the very end
}

}  // namespace zt
