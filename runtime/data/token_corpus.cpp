// TokenCorpus: shards opened and checked against each other, chunked scans, reads across widths.
#include "runtime/data/token_corpus.h"

#include <algorithm>
#include <cstring>

#include "runtime/common/diagnostics.h"
#include "runtime/data/token_shard.h"

namespace zt {

TokenCorpus::TokenCorpus(const std::vector<uint16_t>& tokens, std::string source)
    : memory_(std::make_shared<const std::vector<uint16_t>>(tokens)),
      sources_{std::move(source)},
      counts_{int64_t(tokens.size())},
      total_(int64_t(tokens.size())) {}

TokenCorpus TokenCorpus::open(const std::vector<std::string>& paths, const std::string& what) {
  TokenCorpus c;
  for (const auto& p : paths) {
    auto shard = TokenShardFile::open(p);
    if (shard->size() == 0)
      throw UserError(p, "0 tokens", "empty token shard (its header counts no tokens)",
                      "remove it from the " + what + " shards or regenerate it");
    if (!c.files_.empty() && shard->token_bytes() != c.token_bytes_)
      throw UserError(p, std::to_string(shard->token_bytes() * 8) + "-bit tokens",
                      "mixed token widths in the " + what + " shards: " + c.sources_.front() + " holds " +
                          std::to_string(c.token_bytes_ * 8) + "-bit tokens",
                      "make every shard with the same tokenizer (scripts/prepare_data.py writes one width per corpus)");
    c.token_bytes_ = shard->token_bytes();
    c.sources_.push_back(p);
    c.counts_.push_back(shard->size());
    c.total_ += shard->size();
    c.files_.push_back(std::move(shard));
  }
  return c;
}

void TokenCorpus::copy(int s, int64_t first, int64_t n, int32_t* out) const {
  if (!files_.empty()) {
    files_[size_t(s)]->read(first, n, out);
    return;
  }
  const uint16_t* t = memory_->data() + first;
  for (int64_t i = 0; i < n; ++i) out[i] = int32_t(t[i]);
}

std::vector<uint32_t> TokenCorpus::tokens(int64_t first, int64_t n) const {
  std::vector<uint32_t> out;
  out.reserve(size_t(n));
  std::vector<int32_t> buf;
  for (int s = 0; s < shards() && n > 0; ++s) {
    if (first >= counts_[size_t(s)]) {
      first -= counts_[size_t(s)];
      continue;
    }
    const int64_t k = std::min(n, counts_[size_t(s)] - first);
    buf.resize(size_t(k));
    copy(s, first, k, buf.data());
    for (int32_t t : buf) out.push_back(uint32_t(t));
    n -= k;
    first = 0;
  }
  return out;
}

TokenCorpus::Scan TokenCorpus::scan(uint32_t vocab) const {
  Scan r;
  constexpr int64_t kChunk = int64_t(1) << 18;  // tokens per read: a buffer of 0.5 or 1 MiB
  std::vector<unsigned char> buf;
  for (int s = 0; s < shards(); ++s) {
    // A file is read with ordinary sequential reads (the kernel reads ahead), an in-memory shard in place.
    File f;
    if (!files_.empty()) {
      f = open_regular_file(sources_[size_t(s)], "token shard", "check that the shard is still there");
      if (std::fseek(f.get(), long(kShardHeaderBytes), SEEK_SET) != 0)
        throw UserError(sources_[size_t(s)], "", "cannot seek past the header", "check the file");
      buf.resize(size_t(kChunk) * size_t(token_bytes_));
    }
    for (int64_t first = 0; first < counts_[size_t(s)]; first += kChunk) {
      const int64_t n = std::min(kChunk, counts_[size_t(s)] - first);
      const unsigned char* p = f ? nullptr : reinterpret_cast<const unsigned char*>(memory_->data() + first);
      if (f) {
        if (std::fread(buf.data(), size_t(token_bytes_), size_t(n), f.get()) != size_t(n))
          throw UserError(sources_[size_t(s)] + ":byte " + std::to_string(kShardHeaderBytes + size_t(first) * size_t(token_bytes_)),
                          "", "short read: the shard changed while it was read", "do not rewrite shards during a run");
        p = buf.data();
      }
      auto look = [&](const auto* t) {
        for (int64_t i = 0; i < n; ++i) {
          const uint32_t v = t[i];
          r.max_token = std::max(r.max_token, v);
          if (vocab > 0 && v >= vocab && r.shard < 0) {
            r.shard = s;
            r.index = first + i;
            r.value = v;
          }
        }
      };
      if (token_bytes_ == 2) look(reinterpret_cast<const uint16_t*>(p));
      else look(reinterpret_cast<const uint32_t*>(p));
    }
  }
  return r;
}

std::string TokenCorpus::summary() const {
  const std::string n = std::to_string(total_) + " tokens";
  return shards() > 1 ? std::to_string(shards()) + " shards, " + n : n;
}

}  // namespace zt
