// BatchSampler: a seeded Fisher–Yates permutation of the stream's windows per epoch, addressed by
// global sample index, so ranks read disjoint samples independent of the world size.
#include "runtime/data/sampler.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "base/splitmix64.h"
#include "runtime/common/diagnostics.h"
#include "runtime/data/token_dataset.h"

namespace zt {

namespace {
}  // namespace

BatchSampler::BatchSampler(const TokenCorpus& corpus, int seq_len, uint64_t seed, const std::string& source)
    : corpus_(corpus), T_(seq_len), seed_(seed), windows_(corpus_windows(corpus, seq_len)), row_(size_t(seq_len) + 1) {
  if (windows_ < 1)
    throw UserError(source, std::to_string(corpus.size()) + " tokens",
                    "the token stream is shorter than one training window of seq_len + 1 = " +
                        std::to_string(seq_len + 1) + " tokens" +
                        (corpus.shards() > 1 ? " in one shard (a window never crosses a shard's end)" : ""),
                    "use more data or a shorter --seq-len");
  int64_t w = 0;
  for (int s = 0; s < corpus.shards(); ++s) {
    first_window_.push_back(w);
    w += corpus.shard_size(s) > 0 ? (corpus.shard_size(s) - 1) / seq_len : 0;
  }
}

int64_t BatchSampler::window_of(int64_t g) {
  const int64_t epoch = g / windows_;
  if (epoch != epoch_) {
    perm_.resize(size_t(windows_));
    std::iota(perm_.begin(), perm_.end(), int64_t(0));
    uint64_t s = seed_ ^ (uint64_t(epoch) * 0xD1B54A32D192ED03ull);
    for (int64_t i = windows_ - 1; i > 0; --i) {
      // Unbiased enough for i < 2^32 windows: a 64-bit value reduced by multiply-high.
      const int64_t j = int64_t((unsigned __int128)splitmix64_next(s) * uint64_t(i + 1) >> 64);
      std::swap(perm_[size_t(i)], perm_[size_t(j)]);
    }
    epoch_ = epoch;
  }
  return perm_[size_t(g % windows_)];
}

int64_t BatchSampler::global_index(int64_t step, const BatchGeometry& g, int rank, int micro_step, int row) {
  const int64_t slot = (int64_t(rank) * g.grad_accum + micro_step) * g.micro_batch + row;
  return step * g.global_batch() + slot;
}

void BatchSampler::copy_window(int64_t w, int32_t* tokens, int32_t* targets) const {
  // The last shard whose first window is <= w (shards too short for a window share a number with
  // the next one, and upper_bound skips past them).
  const auto it = std::upper_bound(first_window_.begin(), first_window_.end(), w);
  const int s = int(it - first_window_.begin()) - 1;
  corpus_.copy(s, (w - first_window_[size_t(s)]) * T_, T_ + 1, row_.data());
  std::copy(row_.begin(), row_.end() - 1, tokens);
  std::copy(row_.begin() + 1, row_.end(), targets);
}

void BatchSampler::fill(int64_t step, const BatchGeometry& g, int rank, int micro_step, int32_t* tokens,
                        int32_t* targets) {
  for (int row = 0; row < g.micro_batch; ++row) {
    const int64_t w = window_of(global_index(step, g, rank, micro_step, row));
    copy_window(w, tokens + size_t(row) * T_, targets + size_t(row) * T_);
  }
}

void BatchSampler::fill_sequential(int64_t first_window, int rows, int32_t* tokens, int32_t* targets) const {
  for (int row = 0; row < rows; ++row)
    copy_window((first_window + row) % windows_, tokens + size_t(row) * T_, targets + size_t(row) * T_);
}

}  // namespace zt
