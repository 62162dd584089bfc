// ShardMap: padding each unit to world_size × alignment and intersecting tensors with shards.
#include "runtime/zero/shard_map.h"

#include <algorithm>
#include <stdexcept>

namespace zt {

ShardMap::ShardMap(std::vector<UnitSpec> units, int world_size, int rank, int64_t alignment)
    : units_(std::move(units)), world_size_(world_size), rank_(rank) {
  if (world_size < 1 || rank < 0 || rank >= world_size)
    throw std::invalid_argument("ShardMap: rank " + std::to_string(rank) + " outside world size " +
                                std::to_string(world_size));
  if (alignment < 1) throw std::invalid_argument("ShardMap: alignment must be >= 1");
  const int64_t quantum = int64_t(world_size) * alignment;
  int64_t flat = 0;
  for (const auto& u : units_) {
    UnitShard s;
    s.numel = u.numel;
    s.padded = std::max<int64_t>(quantum, (u.numel + quantum - 1) / quantum * quantum);
    s.shard = s.padded / world_size;
    s.rank_begin = s.shard * rank;
    s.valid = std::clamp<int64_t>(u.numel - s.rank_begin, 0, s.shard);
    s.flat_offset = flat;
    const int64_t lo = s.rank_begin, hi = s.rank_begin + s.shard;
    for (int t = 0; t < int(u.tensors.size()); ++t) {
      const auto& ts = u.tensors[t];
      if (ts.offset < 0 || ts.size < 0 || ts.offset + ts.size > u.numel)
        throw std::invalid_argument("ShardMap: tensor " + ts.name + " lies outside unit " + u.name);
      const int64_t a = std::max(lo, ts.offset), b = std::min(hi, ts.offset + ts.size);
      if (a < b) s.pieces.push_back({t, a, a - lo, b - a});
    }
    std::sort(s.pieces.begin(), s.pieces.end(),
              [](const ShardPiece& x, const ShardPiece& y) { return x.unit_offset < y.unit_offset; });
    flat += s.shard;
    total_numel_ += u.numel;
    total_padded_ += s.padded;
    max_unit_padded_ = std::max(max_unit_padded_, s.padded);
    shards_.push_back(std::move(s));
  }
}

}  // namespace zt
