// Reshard planning: interval intersection of a needed range with every old rank's owned ranges.
#include "runtime/checkpoint/reshard.h"

#include <algorithm>
#include <set>
#include <stdexcept>

namespace zt::ckpt {

std::vector<ReadPiece> plan_reads(const std::vector<RankFileRecord>& old_ranks, const ElementRange& needed) {
  std::vector<ReadPiece> pieces;
  for (const auto& r : old_ranks)
    for (const auto& o : r.owned) {
      if (o.unit != needed.unit) continue;
      const int64_t b = std::max(o.begin, needed.begin), e = std::min(o.end(), needed.end());
      if (b >= e) continue;
      pieces.push_back({r.rank, o, b - o.begin, b - needed.begin, e - b});
    }
  std::sort(pieces.begin(), pieces.end(), [](const ReadPiece& a, const ReadPiece& b) { return a.dst_offset < b.dst_offset; });
  int64_t at = 0;
  for (const auto& p : pieces) {
    if (p.dst_offset != at) break;
    at += p.n;
  }
  if (at != needed.n)
    throw std::logic_error("reshard: elements " + std::to_string(needed.begin + at) + ".. of unit " +
                           std::to_string(needed.unit) + " are in no rank file");
  return pieces;
}

std::vector<int> ranks_touched(const std::vector<RankFileRecord>& old_ranks, const std::vector<ElementRange>& needed) {
  std::set<int> s;
  for (const auto& n : needed)
    for (const auto& p : plan_reads(old_ranks, n)) s.insert(p.rank);
  return {s.begin(), s.end()};
}

}  // namespace zt::ckpt
