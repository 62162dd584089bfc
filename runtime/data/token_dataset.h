// TokenDataset: the train and validation corpora a run reads, where each came from, and the checks
// that they fit the model (at least one window, every id below the vocabulary).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/common/diagnostics.h"
#include "runtime/data/token_corpus.h"

namespace zt {

struct TokenDataset {
  TokenCorpus train, val;
  int vocab = 256;          // the largest token id present in either corpus + 1
  std::string description;  // for the start-up echo
  // Where each corpus came from, for messages: "DIR/train.bin", "DIR/*train*.bin (3 shards)" or
  // "<built-in train stream>".
  std::string train_source = "<built-in train stream>", val_source = "<built-in val stream>";
  bool from_files = false;  // the sources are .bin shards: positions are reported as byte offsets
  // The largest id of each corpus when the load has read it (-1: not known), so that the vocabulary
  // check reads a corpus again only to find where an id that does not fit is.
  int64_t train_max = -1, val_max = -1;
};

// --data DIR: the folder's *train*.bin and *val*.bin shards (shard_files.h), read with pread; or, with
// dir empty, --data-train GLOB and --data-val GLOB. vocab is the largest id + 1 (every token is read
// once, without staying resident). Throws zt::UserError naming the flag or the file.
TokenDataset load_token_dataset(const std::string& dir, const std::string& train_glob = "",
                                const std::string& val_glob = "");

// Largest token id of a stream (0 when empty).
uint16_t max_token(const std::vector<uint16_t>& tokens);

// Windows of seq_len + 1 tokens a corpus holds: (n - 1) / seq_len per shard, so that no window
// crosses a shard's end (a shard's last < seq_len tokens are not trained on).
int64_t corpus_windows(const TokenCorpus& c, int seq_len);

// One error per corpus that holds no training window (seq_len + 1 tokens in one shard) and per
// corpus holding an id >= vocab (naming the file, the byte offset of the first such id and the
// smallest --vocab that fits).
Diagnostics check_dataset(const TokenDataset& data, int seq_len, int vocab);

}  // namespace zt
