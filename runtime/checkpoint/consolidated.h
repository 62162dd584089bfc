// ConsolidatedWeights: a checkpoint tag's fp32 master weights, one whole unit at a time, read from
// the rank files that hold its pieces (what `export` writes out and `sample` generates with).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/checkpoint/manifest.h"
#include "runtime/checkpoint/shard_file.h"

namespace zt::ckpt {

class ConsolidatedWeights {
 public:
  // `checkpoint` is DIR (its `latest`), DIR/TAG or a tag folder; `tag` picks one inside DIR. Throws
  // zt::UserError naming the file and the fix for a missing or damaged checkpoint. `verify` checks
  // the checksum of every block read.
  ConsolidatedWeights(const std::string& checkpoint, const std::string& tag, bool verify = true);
  ConsolidatedWeights(const ConsolidatedWeights&) = delete;
  ConsolidatedWeights& operator=(const ConsolidatedWeights&) = delete;

  const Manifest& manifest() const { return manifest_; }
  const std::string& tag_dir() const { return tag_dir_; }
  // Unit u's manifest.units[u].numel fp32 master values, in the unit's layout.
  void read_unit(int u, float* out) const;
  std::vector<float> unit(int u) const;
  uint64_t bytes_read() const;

 private:
  std::string tag_dir_;
  Manifest manifest_;
  std::vector<std::unique_ptr<ShardFileReader>> files_;  // per saving rank; they point at manifest_
  bool verify_;
};

}  // namespace zt::ckpt
