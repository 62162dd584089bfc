// The built-in dataset: a seeded order-2 Markov "language" over 32 byte symbols, learnable by a
// small model (low conditional entropy) yet far from trivial by unigram counts alone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zt {

struct TokenDataset {
  std::vector<uint16_t> train, val;
  int vocab = 256;          // ids are < vocab
  std::string description;  // for the start-up echo
};

// Train and val streams from the chain defined by `seed` (val continues from a different start).
TokenDataset make_synthetic_dataset(uint64_t seed, size_t train_tokens = size_t(1) << 20,
                                    size_t val_tokens = size_t(1) << 16);

// Exact entropy rate of the built-in chain in nats per token: what a perfect model's loss reaches.
double synthetic_conditional_entropy();

// Plug-in unigram entropy of a token stream, in nats: the loss of the best context-free model.
double unigram_entropy(const std::vector<uint16_t>& tokens);

// DIR/train.bin and DIR/val.bin (.bin shards); vocab is max token id + 1 rounded up to 256.
TokenDataset load_token_dataset(const std::string& dir);

}  // namespace zt
