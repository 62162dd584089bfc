// Finding a corpus's shard files: a folder in llm.c's naming (*train*.bin and *val*.bin, in name
// order; DIR/train.bin and DIR/val.bin are one shard of each), or a glob per split.
#pragma once

#include <string>
#include <vector>

namespace zt {

struct ShardFiles {
  std::vector<std::string> train, val;
  std::string train_pattern, val_pattern;  // what was searched, for messages ("DIR/*train*.bin")
};

// The shards of folder `dir`. Throws zt::UserError naming the folder when it cannot be read or holds
// no train or no val shard, and naming the file when one name matches both splits.
ShardFiles find_shards_in(const std::string& dir);

// The files `pattern` matches (glob(3): *, ?, [...]), in name order. Throws zt::UserError naming
// `flag` and the pattern when it matches nothing.
std::vector<std::string> glob_shards(const std::string& pattern, const std::string& flag);

}  // namespace zt
