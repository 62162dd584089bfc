// The built-in dataset: a seeded order-2 Markov "language" over 32 byte symbols, learnable by a
// small model (low conditional entropy) yet far from trivial by unigram counts alone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/data/token_dataset.h"

namespace zt {

// Train and val streams from the chain defined by `seed` (val continues from a different start).
TokenDataset make_synthetic_dataset(uint64_t seed, size_t train_tokens = size_t(1) << 20,
                                    size_t val_tokens = size_t(1) << 16);

// Exact entropy rate of the built-in chain in nats per token: what a perfect model's loss reaches.
double synthetic_conditional_entropy();

// Plug-in unigram entropy of a token stream, in nats: the loss of the best context-free model.
double unigram_entropy(const std::vector<uint16_t>& tokens);
// The same of a corpus's first `max_tokens` tokens (all of a small one; an estimate of a large one,
// read without scanning it all).
double unigram_entropy(const TokenCorpus& corpus, int64_t max_tokens = int64_t(1) << 24);

}  // namespace zt
