// TokenDataset: the train and validation token streams a run reads, where each came from, and the
// checks that they fit the model (long enough for one window, every id below the vocabulary).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/common/diagnostics.h"

namespace zt {

struct TokenDataset {
  std::vector<uint16_t> train, val;
  int vocab = 256;          // the largest token id present in either stream + 1
  std::string description;  // for the start-up echo
  // Where each stream came from, for messages: "DIR/train.bin" or "<built-in train stream>".
  std::string train_source = "<built-in train stream>", val_source = "<built-in val stream>";
  bool from_files = false;  // the sources are .bin shards: positions are reported as byte offsets
};

// DIR/train.bin and DIR/val.bin (.bin shards, see token_shard.h); vocab is the largest id + 1.
TokenDataset load_token_dataset(const std::string& dir);

// Largest token id of a stream (0 when empty).
uint16_t max_token(const std::vector<uint16_t>& tokens);

// One error per stream that is shorter than one training window (seq_len + 1 tokens) and per
// stream holding an id >= vocab (naming the file, the byte offset of the first such id and the
// smallest --vocab that fits).
Diagnostics check_dataset(const TokenDataset& data, int seq_len, int vocab);

}  // namespace zt
