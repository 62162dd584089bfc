// BlockPlan (kernels/quant/block_plan.h): DeepSpeed's group-size rule on known sizes, the plan's
// choice of block size, and for many shard counts and sizes that blocks tile every shard in order
// without gaps or overlaps and never straddle two shards.
#include <gtest/gtest.h>

#include <random>
#include <stdexcept>

#include "kernels/quant/block_plan.h"

namespace zt::quant {
namespace {

TEST(BlockPlan, DeepSpeedGroupSizeOnKnownSizes) {
  // Values worked by hand from DeepSpeed's loop: groups from ceil(n / 8000) up to the first with
  // n % (8 * groups) == 0.
  EXPECT_EQ(deepspeed_group_size(8), 8u);
  EXPECT_EQ(deepspeed_group_size(16), 16u);
  EXPECT_EQ(deepspeed_group_size(8000), 8000u);
  EXPECT_EQ(deepspeed_group_size(16000), 8000u);
  EXPECT_EQ(deepspeed_group_size(1000000), 8000u);
  EXPECT_EQ(deepspeed_group_size(8008), 1144u);           // 7 groups
  EXPECT_EQ(deepspeed_group_size(8 * 10007), 8u);         // 10007 is prime
  EXPECT_EQ(deepspeed_group_size(32505856), 7936u);       // 4096 groups
  EXPECT_EQ(deepspeed_group_size(50257 * 768), 7424u);    // GPT-2's token embedding
  EXPECT_EQ(deepspeed_group_size(12), 0u);                // not a multiple of 8: DeepSpeed refuses
  EXPECT_EQ(deepspeed_group_size(0), 0u);
  for (size_t n = 8; n < 200000; n += 8 * 37) {
    const size_t g = deepspeed_group_size(n);
    ASSERT_GT(g, 0u);
    EXPECT_EQ(n % g, 0u) << n;
    EXPECT_EQ(g % 8, 0u) << n;
    EXPECT_LE(g, kTargetBlock) << n;
  }
}

TEST(BlockPlan, BlockSizeFollowsDeepSpeedWhereItIsUseful) {
  EXPECT_EQ(BlockPlan(4, 1000000).block_size(), 8000u);
  EXPECT_EQ(BlockPlan(4, 1000000).last_block_size(), 8000u);
  EXPECT_EQ(BlockPlan(2, 50257 * 768).block_size(), 7424u);
  EXPECT_EQ(BlockPlan(3, 4096).block_size(), 4096u);  // a small shard that is a multiple of 8: one block
  EXPECT_EQ(BlockPlan(3, 5).block_size(), 5u);        // a small odd shard: one block
  // DeepSpeed would give blocks of 8 (8 * prime) or 1144: the plan takes 8000 and a short last block.
  const BlockPlan prime(2, 8 * 10007);
  EXPECT_EQ(prime.block_size(), 8000u);
  EXPECT_EQ(prime.blocks_per_shard(), 11u);
  EXPECT_EQ(prime.last_block_size(), 56u);
  EXPECT_EQ(BlockPlan(2, 8008).last_block_size(), 8u);
  const BlockPlan odd(3, 20001);  // not a multiple of 8
  EXPECT_EQ(odd.block_size(), 8000u);
  EXPECT_EQ(odd.last_block_size(), 4001u);
  EXPECT_EQ(odd.shard_q_bytes(QuantBits::Int4), 10001u);
  EXPECT_EQ(odd.shard_q_bytes(QuantBits::Int8), 20001u);
}

TEST(BlockPlan, BlocksTileEachShardAndNeverStraddle) {
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<size_t> shards(1, 16), elems(1, 100000);
  for (int trial = 0; trial < 300; ++trial) {
    const size_t N = shards(rng), S = trial < 20 ? size_t(trial + 1) : elems(rng);
    const BlockPlan p(N, S);
    ASSERT_GT(p.block_size(), 0u);
    ASSERT_LT(p.block_size(), kMaxBlock);
    ASSERT_TRUE(p.block_size() % 8 == 0 || p.block_size() == S) << S;
    ASSERT_EQ(p.num_blocks(), N * p.blocks_per_shard());
    size_t next = 0;
    for (size_t b = 0; b < p.num_blocks(); ++b) {
      const QuantBlock blk = p.block(b);
      ASSERT_EQ(blk.begin, next) << "N=" << N << " S=" << S << " block " << b;
      ASSERT_GT(blk.size, 0u);
      ASSERT_LE(blk.size, p.block_size());
      ASSERT_EQ(blk.shard, blk.begin / S);
      ASSERT_EQ(blk.shard, (blk.begin + blk.size - 1) / S) << "block " << b << " straddles shards";
      // Only a shard's last block may be short.
      if ((blk.begin + blk.size) % S != 0) {
        ASSERT_EQ(blk.size, p.block_size());
      }
      next = blk.begin + blk.size;
    }
    ASSERT_EQ(next, p.total_elems());
  }
}

TEST(BlockPlan, RefusesEmptyPlansAndBadBlockSizes) {
  EXPECT_THROW(BlockPlan(0, 100), std::invalid_argument);
  EXPECT_THROW(BlockPlan(2, 0), std::invalid_argument);
  EXPECT_THROW(BlockPlan(2, 100, 12), std::invalid_argument);  // splits a byte of int4
  EXPECT_EQ(BlockPlan(2, 100, 1000).block_size(), 100u);      // capped at the shard
  EXPECT_THROW(BlockPlan(2, 100).block(2), std::out_of_range);
}

}  // namespace
}  // namespace zt::quant
