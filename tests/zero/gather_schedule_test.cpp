// GatherSchedule (runtime/zero/gather_schedule.h) as a table: stage 3's prefetch and release
// answers for small unit layouts, each row worked out by hand from the rules DeepSpeed documents
// (stage3_prefetch_bucket_size, stage3_max_live_parameters, stage3_param_persistence_threshold,
// stage3_max_reuse_distance) and a tied head reading the embedding.
#include <gtest/gtest.h>

#include <vector>

#include "runtime/zero/gather_schedule.h"

namespace zt {
namespace {

GatherOptions overlapping(int64_t prefetch, int64_t max_live = 1000000000) {
  GatherOptions o;
  o.overlap = true;
  o.prefetch_bucket_size = prefetch;
  o.max_live_parameters = max_live;
  o.persistence_threshold = 0;
  o.max_reuse_distance = 0;
  return o;
}

// Four units of 100 padded elements (90 parameters each): forward positions 0..3, backward 4..7.
GatherSchedule four(const GatherOptions& o, bool tied = false) {
  return GatherSchedule({100, 100, 100, 100}, {90, 90, 90, 90}, o, tied);
}

TEST(GatherSchedule, WalkPositionsMapToUnits) {
  const GatherSchedule s = four(overlapping(0));
  const std::vector<int> expected = {0, 1, 2, 3, 3, 2, 1, 0};
  for (int pos = 0; pos < 8; ++pos) EXPECT_EQ(s.unit_at(pos), expected[size_t(pos)]) << pos;
  EXPECT_FALSE(s.reads_embedding(3));
  EXPECT_TRUE(four(overlapping(0), true).reads_embedding(3));
  EXPECT_FALSE(four(overlapping(0), true).reads_embedding(0));
}

TEST(GatherSchedule, PrefetchTable) {
  struct Row {
    const char* name;
    GatherOptions options;
    int pos;
    int64_t live;
    std::vector<bool> gathered;
    std::vector<int> expected;
  };
  GatherOptions off = overlapping(1000);
  off.overlap = false;
  const std::vector<Row> rows = {
      {"no overlap: nothing ahead", off, 0, 100, {true, false, false, false}, {}},
      {"budget of two units", overlapping(200), 0, 100, {true, false, false, false}, {1, 2}},
      {"budget one element short of a unit", overlapping(99), 0, 100, {true, false, false, false}, {}},
      {"gathered units skipped, budget not spent on them", overlapping(100), 0, 200, {true, true, false, false}, {2}},
      {"max live stops it", overlapping(1000, 300), 0, 100, {true, false, false, false}, {1, 2}},
      {"live already at the limit", overlapping(1000, 100), 0, 100, {true, false, false, false}, {}},
      // From the last forward position the walk turns: 3 (gathered) then 2, 1, 0 in backward.
      {"across the turn", overlapping(1000), 3, 100, {false, false, false, true}, {2, 1, 0}},
      // A unit met twice ahead (forward and backward) is fetched once and counted once.
      {"each unit once", overlapping(1000), 0, 100, {true, false, false, false}, {1, 2, 3}},
  };
  for (const Row& r : rows) {
    const GatherSchedule s = four(r.options);
    EXPECT_EQ(s.prefetch_after(r.pos, r.live, r.gathered), r.expected) << r.name;
  }
}

TEST(GatherSchedule, KeepTable) {
  struct Row {
    const char* name;
    int64_t persistence, reuse, max_live;
    bool tied;
    int unit, pos;
    int64_t live;
    bool keeps;
  };
  const std::vector<Row> rows = {
      {"released by default", 0, 0, 1000000000, false, 1, 1, 100, false},
      {"at the persistence threshold: kept", 90, 0, 1000000000, false, 1, 1, 100, true},
      {"one under it: released", 89, 0, 1000000000, false, 1, 1, 100, false},
      // Unit 3 at its forward position 3 is used next at position 4 (backward): distance 0.
      {"next use at once: kept with any positive distance", 0, 1, 1000000000, false, 3, 3, 100, true},
      // Unit 2 at position 2 is used next at 5; between them 3 and 3 again: 180 parameters.
      {"reuse distance 180 < 181: kept", 0, 181, 1000000000, false, 2, 2, 100, true},
      {"reuse distance 180 !< 180: released", 0, 180, 1000000000, false, 2, 2, 100, false},
      {"kept only while live fits", 0, 181, 99, false, 2, 2, 100, false},
      {"last use (backward of unit 0): released", 0, 1000000000, 1000000000, false, 0, 7, 100, false},
      // A tied head uses the embedding at the head's positions (3 forward, 4 backward).
      {"tied: embedding kept for the head", 0, 1000000000, 1000000000, true, 0, 0, 100, true},
      {"untied: embedding's next use is its backward", 0, 1000000000, 1000000000, false, 0, 0, 100, true},
      {"untied, distance 540 !< 540", 0, 540, 1000000000, false, 0, 0, 100, false},
      {"tied, distance 180 < 181", 0, 181, 1000000000, true, 0, 0, 100, true},
  };
  for (const Row& r : rows) {
    GatherOptions o = overlapping(0, r.max_live);
    o.persistence_threshold = r.persistence;
    o.max_reuse_distance = r.reuse;
    EXPECT_EQ(four(o, r.tied).keeps_after(r.unit, r.pos, r.live), r.keeps) << r.name;
  }
}

}  // namespace
}  // namespace zt
