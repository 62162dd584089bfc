// TokenCorpus: one split's tokens as an ordered list of shards (.bin files read with pread, or one
// in-memory stream for the built-in data and tests), all of one token width. Cheap to copy (the
// shards are shared); nothing is read until asked for.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/data/token_shard_file.h"

namespace zt {

class TokenCorpus {
 public:
  TokenCorpus() = default;
  // One in-memory shard holding a copy of `tokens` (implicit: a stream is a one-shard corpus).
  TokenCorpus(const std::vector<uint16_t>& tokens, std::string source = "<memory>");  // NOLINT
  // The shards at `paths`, in that order, kept open. Throws zt::UserError naming the file: one
  // that check_shard_header refuses, an empty shard, a shard whose token width differs from the
  // first one's. `what` names the split in messages ("train", "val").
  static TokenCorpus open(const std::vector<std::string>& paths, const std::string& what);

  struct Scan {
    uint32_t max_token = 0;  // the largest id in the corpus
    int shard = -1;          // the first id >= the vocabulary asked for: its shard and index (-1: none)
    int64_t index = -1;
    uint32_t value = 0;
  };
  // Reads every token once with sequential reads into a small buffer: the largest id and the first id >= vocab (vocab 0: none looked for).
  Scan scan(uint32_t vocab = 0) const;

  int shards() const { return int(sources_.size()); }
  int64_t size() const { return total_; }  // tokens in all shards
  int64_t shard_size(int s) const { return counts_[size_t(s)]; }
  const std::string& source(int s) const { return sources_[size_t(s)]; }
  int token_bytes() const { return token_bytes_; }
  bool from_files() const { return !files_.empty(); }
  // Tokens [first, first + n) of shard s as int32 (a file shard: one pread).
  void copy(int s, int64_t first, int64_t n, int32_t* out) const;
  // Tokens [first, first + n) of the concatenation of the shards (tests, small reads).
  std::vector<uint32_t> tokens(int64_t first, int64_t n) const;
  // "3 shards, 1234 tokens" / "1234 tokens"
  std::string summary() const;

 private:
  std::vector<std::shared_ptr<const TokenShardFile>> files_;  // empty for an in-memory corpus
  std::shared_ptr<const std::vector<uint16_t>> memory_;
  std::vector<std::string> sources_;
  std::vector<int64_t> counts_;
  int64_t total_ = 0;
  int token_bytes_ = 2;
};

}  // namespace zt
