// BatchSampler: which training windows each rank reads. Sample slot j of global step s is window
// perm_e[(s·GB + j) mod W] of a seeded per-epoch permutation, so a global batch's samples, and
// their order by slot, depend on the seed only: never on the world size or how it is split.
// Windows are numbered shard by shard and never cross a shard's end (corpus_windows).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/data/token_corpus.h"

namespace zt {

struct BatchGeometry {
  int world_size = 1;
  int micro_batch = 1;  // rows per micro-step per rank
  int grad_accum = 1;   // micro-steps per step
  int64_t global_batch() const { return int64_t(world_size) * micro_batch * grad_accum; }
};

class BatchSampler {
 public:
  // Window w of shard s is its tokens [w·T, w·T + T] (T + 1 tokens: inputs and shifted targets).
  // Throws zt::UserError naming `source` (the file) when no shard holds T + 1 tokens.
  BatchSampler(const TokenCorpus& corpus, int seq_len, uint64_t seed, const std::string& source = "data");

  int64_t num_windows() const { return windows_; }
  // The window of global sample index g (epoch g / num_windows()).
  int64_t window_of(int64_t global_index);
  // The global sample index of rank `rank`'s row `row` in micro-step `micro_step` of `step`:
  // slot = rank·M·G + micro_step·M + row.
  static int64_t global_index(int64_t step, const BatchGeometry& g, int rank, int micro_step, int row);
  // Fills tokens and targets [M, T] for one rank's micro-step.
  void fill(int64_t step, const BatchGeometry& g, int rank, int micro_step, int32_t* tokens, int32_t* targets);
  // Fills rows with windows first_window, first_window + 1, ... in order (evaluation).
  void fill_sequential(int64_t first_window, int rows, int32_t* tokens, int32_t* targets) const;

 private:
  void copy_window(int64_t w, int32_t* tokens, int32_t* targets) const;
  TokenCorpus corpus_;
  int T_;
  uint64_t seed_;
  std::vector<int64_t> first_window_;  // per shard, the number of the shard's first window
  int64_t windows_;
  int64_t epoch_ = -1;
  std::vector<int64_t> perm_;
  mutable std::vector<int32_t> row_;  // T + 1 tokens of one window
};

}  // namespace zt
