// Resharding: a checkpoint saved at world N and stage s loads at world M and stage t for every
// N, M in 1..4 and both of the fake state's layouts in each direction (stage 0: a whole copy per
// rank; stages 1–3: the same even shards, so one of them stands for all three; the engine's own
// stage pairs are resumed through the binary in resume_test.py); every element of every array is
// checked, every element is written exactly once, and the bytes each load reads are what its new
// shard needs.
#include <gtest/gtest.h>

#include "runtime/checkpoint/reshard.h"
#include "tests/checkpoint/ckpt_test_util.h"

namespace zt::ckpt {
namespace {

TEST(ReshardPlan, PiecesTileTheNeededRange) {
  std::vector<RankFileRecord> old(3);
  for (int r = 0; r < 3; ++r) {
    old[size_t(r)].rank = r;
    old[size_t(r)].owned = {{0, r * 10, 10}};
  }
  const auto p = plan_reads(old, {0, 5, 17});  // elements 5..21: ranks 0, 1, 2
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].rank, 0);
  EXPECT_EQ(p[0].src_offset, 5);
  EXPECT_EQ(p[0].n, 5);
  EXPECT_EQ(p[1].rank, 1);
  EXPECT_EQ(p[1].dst_offset, 5);
  EXPECT_EQ(p[1].n, 10);
  EXPECT_EQ(p[2].rank, 2);
  EXPECT_EQ(p[2].n, 2);
  EXPECT_EQ(ranks_touched(old, {{0, 12, 3}}), std::vector<int>{1});
  EXPECT_THROW(plan_reads(old, {0, 25, 10}), std::logic_error);
}

TEST(ReshardMatrix, EveryWorldSizeAndBothLayoutsEachWay) {
  const auto m = test::small_model();
  const std::pair<int, int> stages[] = {{0, 0}, {0, 3}, {1, 0}, {2, 3}, {3, 1}};
  int cases = 0;
  for (int N = 1; N <= 4; ++N)
    for (const auto& [s, t] : stages) {
      test::TempDir dir;
      SaveOptions so;
      so.block_bytes = 256;  // small blocks: verified reads then over-read little
      const auto saved = test::save_fake(dir.path(), m, N, s, 11, so);
      ASSERT_TRUE(saved.ok) << saved.message;
      for (int M = 1; M <= 4; ++M) {
        SCOPED_TRACE("saved at world " + std::to_string(N) + " stage " + std::to_string(s) + ", loaded at world " +
                     std::to_string(M) + " stage " + std::to_string(t));
        for (bool verify : {false, true}) {
          LoadOptions o;
          o.path = dir.path();
          o.verify = verify;
          const auto c = test::load_fake(o, m, M, t, 11);
          EXPECT_EQ(c.mismatches, 0);
          EXPECT_EQ(c.rewritten, 0);
          EXPECT_EQ(c.commits, M);
          EXPECT_TRUE(c.counters_equal);
          // What the new shards need: every array of every needed element, 4 bytes each.
          const uint64_t arrays = 3, per_copy = uint64_t(m.total_params()) * 4 * arrays;
          EXPECT_EQ(c.bytes_needed, t == 0 ? per_copy * uint64_t(M) : per_copy);
          const uint64_t payload = c.bytes_read - c.header_bytes;
          if (!verify) {
            EXPECT_EQ(payload, c.bytes_needed) << "unverified loads read exactly the needed bytes";
          } else {
            // Whole 256-byte blocks: at most two partial blocks per piece more than needed (a rank
            // reads at most one piece per unit from each file it opens).
            uint64_t pieces = 0;
            for (const auto& r : c.results) pieces += uint64_t(m.units()) * r.files_read.size();
            EXPECT_GE(payload, c.bytes_needed);
            EXPECT_LE(payload, c.bytes_needed + pieces * arrays * 2 * 256);
          }
          // Stages 1–3 at M > 1: no rank reads the whole model.
          if (t != 0 && M > 1) {
            for (const auto& r : c.results) EXPECT_LT(r.bytes_needed, per_copy / uint64_t(M) + 4096);
          }
          ++cases;
        }
      }
    }
  EXPECT_EQ(cases, 4 * 5 * 4 * 2);
}

TEST(Reshard, LoadsFromOnlyTheFilesHoldingTheNewShard) {
  const auto m = test::small_model();
  test::TempDir dir;
  ASSERT_TRUE(test::save_fake(dir.path(), m, 4, 2, 3).ok);
  LoadOptions o;
  o.path = dir.path();
  const auto c = test::load_fake(o, m, 2, 2, 3);
  ASSERT_EQ(c.results.size(), 2u);
  for (const auto& r : c.results) EXPECT_LE(r.files_read.size(), 3u) << "world 4 -> 2: each new shard spans ~2 old ones";
}

TEST(Reshard, WeightsOnlyLoadLeavesTheMomentsAlone) {
  const auto m = test::small_model();
  test::TempDir dir;
  ASSERT_TRUE(test::save_fake(dir.path(), m, 2, 1, 6).ok);
  LoadOptions o;
  o.path = dir.path();
  o.load_optimizer_states = false;
  o.load_counters = false;
  // The new run's state holds generation 2 everywhere: the master must become the saved generation
  // 6, and the moments must still hold generation 2, every element.
  const auto c = test::load_fake(o, m, 3, 3, 6, OptimizerType::AdamW, /*prefill=*/2);
  EXPECT_EQ(c.mismatches, 0);
  EXPECT_EQ(c.unloaded_changed, 0) << "a weights-only load wrote the moments";
  EXPECT_EQ(c.bytes_needed, uint64_t(m.total_params()) * 4);
}

TEST(Reshard, AdamStateLoadsIntoLambWithAWarningButNotIntoSgd) {
  const auto m = test::small_model();
  test::TempDir dir;
  ASSERT_TRUE(test::save_fake(dir.path(), m, 2, 1, 6).ok);
  LoadOptions o;
  o.path = dir.path();
  const auto c = test::load_fake(o, m, 2, 1, 6, OptimizerType::Lamb);
  EXPECT_EQ(c.mismatches, 0);
  EXPECT_EQ(c.results[0].warnings.warning_count(), 1u);
  try {
    test::load_fake(o, m, 2, 1, 6, OptimizerType::SGD);
    ADD_FAILURE() << "an SGD run loaded Adam's state";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("lacks momentum_buffer"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--init-from"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace zt::ckpt
