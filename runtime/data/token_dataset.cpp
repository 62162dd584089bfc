// Loading a run's train/val corpora and checking them against the model's context and vocabulary.
#include "runtime/data/token_dataset.h"

#include <algorithm>

#include "runtime/data/shard_files.h"
#include "runtime/data/token_shard.h"

namespace zt {

uint16_t max_token(const std::vector<uint16_t>& tokens) {
  uint16_t mx = 0;
  for (uint16_t t : tokens) mx = std::max(mx, t);
  return mx;
}

int64_t corpus_windows(const TokenCorpus& c, int seq_len) {
  int64_t w = 0;
  if (seq_len < 1) return 0;
  for (int s = 0; s < c.shards(); ++s) w += c.shard_size(s) > 0 ? (c.shard_size(s) - 1) / seq_len : 0;
  return w;
}

namespace {

std::string source_of(const std::vector<std::string>& files, const std::string& pattern) {
  return files.size() == 1 ? files.front() : pattern + " (" + std::to_string(files.size()) + " shards)";
}

}  // namespace

TokenDataset load_token_dataset(const std::string& dir, const std::string& train_glob, const std::string& val_glob) {
  if (!dir.empty() && (!train_glob.empty() || !val_glob.empty()))
    throw UserError(train_glob.empty() ? "--data-val" : "--data-train", train_glob.empty() ? val_glob : train_glob,
                    "--data DIR and --data-train/--data-val choose the data two ways",
                    "pass either --data DIR or both --data-train GLOB and --data-val GLOB");
  ShardFiles f;
  if (!dir.empty()) {
    f = find_shards_in(dir);
  } else {
    if (train_glob.empty() || val_glob.empty())
      throw UserError(train_glob.empty() ? "--data-val" : "--data-train", train_glob.empty() ? val_glob : train_glob,
                      "--data-train and --data-val go together", "pass both, or --data DIR");
    f.train_pattern = train_glob;
    f.val_pattern = val_glob;
    Diagnostics d;
    for (auto [glob, flag, out] : {std::tuple{&train_glob, "--data-train", &f.train},
                                   std::tuple{&val_glob, "--data-val", &f.val}}) {
      try {
        *out = glob_shards(*glob, flag);
      } catch (const UserError& e) {
        d.append(e.diagnostics());
      }
    }
    if (d.has_errors()) throw UserError(d);
  }
  TokenDataset d;
  d.train_source = source_of(f.train, f.train_pattern);
  d.val_source = source_of(f.val, f.val_pattern);
  d.from_files = true;
  d.train = TokenCorpus::open(f.train, "train");
  d.val = TokenCorpus::open(f.val, "val");
  if (d.train.token_bytes() != d.val.token_bytes())
    throw UserError(f.val.front(), std::to_string(d.val.token_bytes() * 8) + "-bit tokens",
                    "the validation shards' token width differs from the train shards' (" +
                        std::to_string(d.train.token_bytes() * 8) + "-bit, " + f.train.front() + ")",
                    "make both splits with the same tokenizer");
  d.train_max = d.train.scan().max_token;
  d.val_max = d.val.scan().max_token;
  d.vocab = int(std::max(d.train_max, d.val_max)) + 1;
  const std::string where = dir.empty() ? f.train_pattern + " / " + f.val_pattern : dir;
  d.description = where + " (" + d.train.summary() + " train / " + d.val.summary() + " val, " +
                  std::to_string(d.train.token_bytes() * 8) + "-bit)";
  return d;
}

namespace {

void check_corpus(const TokenCorpus& c, int64_t known_max, const std::string& source, bool file, int seq_len, int vocab,
                  Diagnostics& d) {
  const int64_t window = int64_t(seq_len) + 1;
  int64_t longest = 0;
  for (int s = 0; s < c.shards(); ++s) longest = std::max(longest, c.shard_size(s));
  if (seq_len >= 1 && corpus_windows(c, seq_len) < 1)
    d.error(source, c.shards() > 1 ? "longest shard " + std::to_string(longest) + " tokens" : std::to_string(longest) + " tokens",
            "shorter than one training window of seq_len + 1 = " + std::to_string(window) +
                " tokens" + (c.shards() > 1 ? " (a window never crosses a shard's end)" : ""),
            longest >= 2 ? "use more data or --seq-len " + std::to_string(longest - 1) + " or less"
                         : "use more data");
  if (vocab < 1 || (known_max >= 0 && known_max < vocab)) return;
  const TokenCorpus::Scan sc = c.scan(uint32_t(vocab));
  if (sc.shard < 0) return;
  const std::string& shard = file ? c.source(sc.shard) : source;
  const std::string where = file ? shard + ":byte " + std::to_string(kShardHeaderBytes + size_t(sc.index) * size_t(c.token_bytes()))
                                 : source + ":token " + std::to_string(sc.index);
  d.error(where, "token id " + std::to_string(sc.value),
          "is >= the model's vocabulary of " + std::to_string(vocab) + " (token " + std::to_string(sc.index) +
              "; the largest id in " + (c.shards() > 1 ? "these shards" : "this stream") + " is " +
              std::to_string(sc.max_token) + ")",
          "use --vocab " + std::to_string(uint64_t(sc.max_token) + 1) + " or larger, or re-tokenize the data");
}

}  // namespace

Diagnostics check_dataset(const TokenDataset& data, int seq_len, int vocab) {
  Diagnostics d;
  check_corpus(data.train, data.train_max, data.train_source, data.from_files, seq_len, vocab, d);
  check_corpus(data.val, data.val_max, data.val_source, data.from_files, seq_len, vocab, d);
  return d;
}

}  // namespace zt
