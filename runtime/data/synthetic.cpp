// The built-in order-2 Markov language and the entropy helpers.
#include "runtime/data/synthetic.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "base/splitmix64.h"

namespace zt {

namespace {

// 32 symbols, written as readable bytes so a sample of the data can be printed.
constexpr char kSymbols[] = "abcdefghijklmnopqrstuvwxyz .,;!?";
constexpr int kK = 32;
// Next symbol given (a, b): the "usual" successor of b alone, or one of two successors of the pair.
constexpr std::array<double, 3> kProbs = {0.6, 0.25, 0.15};

struct Chain {
  std::array<uint8_t, kK> first;                // successor of b alone
  std::array<std::array<uint8_t, 2>, kK * kK> pair;  // successors of (a, b), distinct from first[b]

  explicit Chain(uint64_t seed) {
    uint64_t s = seed ^ 0x5A17C0DEull;
    for (int b = 0; b < kK; ++b) first[size_t(b)] = uint8_t(splitmix64_next(s) % kK);
    for (int ab = 0; ab < kK * kK; ++ab) {
      const int b = ab % kK;
      uint8_t x, y;
      do x = uint8_t(splitmix64_next(s) % kK); while (x == first[size_t(b)]);
      do y = uint8_t(splitmix64_next(s) % kK); while (y == first[size_t(b)] || y == x);
      pair[size_t(ab)] = {x, y};
    }
  }

  void generate(uint64_t seed, size_t n, std::vector<uint16_t>& out) const {
    uint64_t s = seed;
    int a = int(splitmix64_next(s) % kK), b = int(splitmix64_next(s) % kK);
    out.resize(n);
    for (size_t i = 0; i < n; ++i) {
      const double u = double(splitmix64_next(s) >> 11) * (1.0 / 9007199254740992.0);
      int c;
      if (u < kProbs[0]) c = first[size_t(b)];
      else if (u < kProbs[0] + kProbs[1]) c = pair[size_t(a * kK + b)][0];
      else c = pair[size_t(a * kK + b)][1];
      out[i] = uint16_t(uint8_t(kSymbols[c]));
      a = b;
      b = c;
    }
  }
};

}  // namespace

TokenDataset make_synthetic_dataset(uint64_t seed, size_t train_tokens, size_t val_tokens) {
  const Chain chain(seed);
  TokenDataset d;
  uint64_t s = seed;
  const uint64_t train_seed = splitmix64_next(s), val_seed = splitmix64_next(s);
  std::vector<uint16_t> train, val;
  chain.generate(train_seed, train_tokens, train);
  chain.generate(val_seed, val_tokens, val);
  d.train_max = max_token(train);
  d.val_max = max_token(val);
  d.vocab = int(std::max(d.train_max, d.val_max)) + 1;
  d.train = TokenCorpus(train, d.train_source);
  d.val = TokenCorpus(val, d.val_source);
  d.description = "built-in order-2 Markov language (32 symbols, seed " + std::to_string(seed) + ", " +
                  std::to_string(train_tokens) + " train / " + std::to_string(val_tokens) + " val tokens)";
  return d;
}

double synthetic_conditional_entropy() {
  // The three successors of every context are distinct by construction.
  double h = 0;
  for (double p : kProbs) h -= p * std::log(p);
  return h;
}

namespace {

// −Σ p log p over the tokens' frequencies.
template <class Tokens>
double entropy_of(const Tokens& tokens, size_t vocab) {
  std::vector<double> counts(std::max<size_t>(vocab, 1), 0.0);
  for (auto t : tokens) counts[size_t(t)] += 1;
  double h = 0;
  const double n = double(tokens.size());
  for (double c : counts)
    if (c > 0) h -= c / n * std::log(c / n);
  return h;
}

}  // namespace

double unigram_entropy(const std::vector<uint16_t>& tokens) { return entropy_of(tokens, 65536); }

double unigram_entropy(const TokenCorpus& corpus, int64_t max_tokens) {
  const auto t = corpus.tokens(0, std::min(corpus.size(), max_tokens));
  return entropy_of(t, t.empty() ? 1 : size_t(*std::max_element(t.begin(), t.end())) + 1);
}

}  // namespace zt
