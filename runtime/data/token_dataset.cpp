// Loading a train/val shard pair and checking it against the model's context length and vocabulary.
#include "runtime/data/token_dataset.h"

#include <algorithm>

#include "runtime/data/token_shard.h"

namespace zt {

uint16_t max_token(const std::vector<uint16_t>& tokens) {
  uint16_t mx = 0;
  for (uint16_t t : tokens) mx = std::max(mx, t);
  return mx;
}

TokenDataset load_token_dataset(const std::string& dir) {
  TokenDataset d;
  d.train_source = dir + "/train.bin";
  d.val_source = dir + "/val.bin";
  d.from_files = true;
  d.train = read_token_shard(d.train_source);
  d.val = read_token_shard(d.val_source);
  d.vocab = int(std::max(max_token(d.train), max_token(d.val))) + 1;
  d.description = dir + " (" + std::to_string(d.train.size()) + " train / " + std::to_string(d.val.size()) +
                  " val tokens)";
  return d;
}

namespace {

void check_stream(const std::vector<uint16_t>& s, const std::string& source, bool file, int seq_len, int vocab,
                  Diagnostics& d) {
  const int64_t window = int64_t(seq_len) + 1;
  if (seq_len >= 1 && int64_t(s.size()) < window)
    d.error(source, std::to_string(s.size()) + " tokens",
            "shorter than one training window of seq_len + 1 = " + std::to_string(window) + " tokens",
            s.size() >= 2 ? "use more data or --seq-len " + std::to_string(s.size() - 1) + " or less"
                          : "use more data");
  if (vocab < 1) return;
  const auto bad = std::find_if(s.begin(), s.end(), [&](uint16_t t) { return int(t) >= vocab; });
  if (bad == s.end()) return;
  const size_t i = size_t(bad - s.begin());
  const std::string where = file ? source + ":byte " + std::to_string(kShardHeaderBytes + i * sizeof(uint16_t))
                                 : source + ":token " + std::to_string(i);
  d.error(where, "token id " + std::to_string(*bad),
          "is >= the model's vocabulary of " + std::to_string(vocab) + " (token " + std::to_string(i) +
              "; the largest id in this stream is " + std::to_string(max_token(s)) + ")",
          "use --vocab " + std::to_string(int(max_token(s)) + 1) + " or larger, or re-tokenize the data");
}

}  // namespace

Diagnostics check_dataset(const TokenDataset& data, int seq_len, int vocab) {
  Diagnostics d;
  check_stream(data.train, data.train_source, data.from_files, seq_len, vocab, d);
  check_stream(data.val, data.val_source, data.from_files, seq_len, vocab, d);
  return d;
}

}  // namespace zt
