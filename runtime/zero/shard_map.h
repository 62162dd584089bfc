// ShardMap: the flat, padded ZeRO layout — each unit's parameters padded to a multiple of
// world_size × alignment and split into equal per-rank shards — and where each tensor's elements live.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zt {

struct TensorSpec {
  std::string name;
  int64_t offset = 0;  // element offset inside its unit's flat buffer
  int64_t size = 0;    // elements
  int dims = 2;        // its shape's rank (1: a bias or a norm's weight)
};

struct UnitSpec {
  std::string name;
  int64_t numel = 0;                // parameters in the unit (sum of its tensors, no padding)
  std::vector<TensorSpec> tensors;  // views into the unit's flat buffer
};

// The part of one tensor that one rank's shard holds, in both coordinates.
struct ShardPiece {
  int tensor = 0;             // index into UnitSpec::tensors
  int64_t unit_offset = 0;    // element offset in the unit's (padded) flat buffer
  int64_t shard_offset = 0;   // element offset inside the rank's shard of the unit
  int64_t size = 0;
};

struct UnitShard {
  int64_t numel = 0;       // unpadded elements of the unit
  int64_t padded = 0;      // numel rounded up to a multiple of world_size × alignment
  int64_t shard = 0;       // padded / world_size: elements each rank holds
  int64_t rank_begin = 0;  // this rank's shard = [rank_begin, rank_begin + shard) in the unit
  int64_t valid = 0;       // elements of this rank's shard that are real parameters (the rest is padding)
  int64_t flat_offset = 0; // offset of this unit's shard inside the rank's concatenated shard buffer
  std::vector<ShardPiece> pieces;  // tensors (or parts) inside this rank's shard, in offset order
};

class ShardMap {
 public:
  // alignment: elements; each shard starts at a multiple of it (so SIMD/aligned copies work).
  ShardMap(std::vector<UnitSpec> units, int world_size, int rank, int64_t alignment = 16);

  int world_size() const { return world_size_; }
  int rank() const { return rank_; }
  int units() const { return int(units_.size()); }
  const UnitSpec& unit(int u) const { return units_[u]; }
  const UnitShard& shard(int u) const { return shards_[u]; }
  int64_t total_numel() const { return total_numel_; }         // Ψ
  int64_t total_padded() const { return total_padded_; }       // Σ padded
  int64_t shard_numel() const { return total_padded_ / world_size_; }  // this rank's concatenated shard
  int64_t max_unit_padded() const { return max_unit_padded_; }

  // The shard of `unit` held by rank r (any rank, not just ours): [begin, begin + shard).
  int64_t rank_begin(int u, int r) const { return shards_[u].shard * r; }

 private:
  std::vector<UnitSpec> units_;
  std::vector<UnitShard> shards_;
  int world_size_, rank_;
  int64_t total_numel_ = 0, total_padded_ = 0, max_unit_padded_ = 0;
};

}  // namespace zt
