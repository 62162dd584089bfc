// ShardMap tests: padding, per-rank ranges, valid counts and tensor pieces cover every element once.
#include <gtest/gtest.h>

#include <vector>

#include "runtime/zero/shard_map.h"

namespace zt {
namespace {

std::vector<UnitSpec> two_units() {
  UnitSpec a{"embedding", 37, {{"wte", 0, 30}, {"wpe", 30, 7}}};
  UnitSpec b{"head", 5, {{"lnf.w", 0, 3}, {"lnf.b", 3, 2}}};
  return {a, b};
}

TEST(ShardMap, PadsEachUnitToWorldTimesAlignment) {
  ShardMap m(two_units(), 4, 0, 4);
  EXPECT_EQ(m.shard(0).padded, 48);  // 37 -> multiple of 16
  EXPECT_EQ(m.shard(0).shard, 12);
  EXPECT_EQ(m.shard(1).padded, 16);  // a tiny unit still gets one quantum
  EXPECT_EQ(m.total_numel(), 42);
  EXPECT_EQ(m.total_padded(), 64);
  EXPECT_EQ(m.shard_numel(), 16);
  EXPECT_EQ(m.shard(1).flat_offset, 12);
}

TEST(ShardMap, ValidCountsSumToNumelAndPiecesCoverEveryElementOnce) {
  for (int W : {1, 2, 3, 4, 8}) {
    std::vector<int> covered(37, 0);
    int64_t valid = 0;
    for (int r = 0; r < W; ++r) {
      ShardMap m(two_units(), W, r, 2);
      const auto& s = m.shard(0);
      valid += s.valid;
      for (const auto& p : s.pieces) {
        EXPECT_EQ(p.unit_offset, s.rank_begin + p.shard_offset);
        for (int64_t i = 0; i < p.size; ++i) covered[p.unit_offset + i]++;
      }
    }
    EXPECT_EQ(valid, 37) << "W=" << W;
    for (int i = 0; i < 37; ++i) EXPECT_EQ(covered[i], 1) << "element " << i << " W=" << W;
  }
}

TEST(ShardMap, LastRankHoldsThePaddingAndAPieceMaySpanTheShardBoundary) {
  ShardMap last(two_units(), 4, 3, 4);
  EXPECT_EQ(last.shard(0).rank_begin, 36);
  EXPECT_EQ(last.shard(0).valid, 1);  // element 36 only; 11 elements of padding
  ASSERT_EQ(last.shard(0).pieces.size(), 1u);
  EXPECT_EQ(last.shard(0).pieces[0].tensor, 1);  // wpe's last element
  ShardMap r2(two_units(), 4, 2, 4);  // [24, 36): wte 24..29 and wpe 30..35
  ASSERT_EQ(r2.shard(0).pieces.size(), 2u);
  EXPECT_EQ(r2.shard(0).pieces[0].size, 6);
  EXPECT_EQ(r2.shard(0).pieces[1].size, 6);
  EXPECT_EQ(r2.shard(0).pieces[1].shard_offset, 6);
}

TEST(ShardMap, RejectsBadRankAndTensorsOutsideTheUnit) {
  EXPECT_THROW(ShardMap(two_units(), 2, 2), std::invalid_argument);
  UnitSpec bad{"u", 4, {{"t", 2, 5}}};
  EXPECT_THROW(ShardMap({bad}, 1, 0), std::invalid_argument);
}

}  // namespace
}  // namespace zt
