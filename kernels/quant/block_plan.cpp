// BlockPlan's arithmetic and DeepSpeed's group-size rule (block_plan.h).
#include "kernels/quant/block_plan.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace zt::quant {

size_t deepspeed_group_size(size_t n) {
  if (n == 0 || n % 8 != 0) return 0;
  size_t groups = (n + kTargetBlock - 1) / kTargetBlock;
  while (groups < n && n % (8 * groups) != 0) ++groups;
  while (n % (16 * groups) == 0 && n / groups > kTargetBlock) groups *= 2;
  return n / groups;
}

namespace {

size_t plan_block_size(size_t shard_elems) {
  const size_t ds = deepspeed_group_size(shard_elems);
  if (ds != 0 && (ds >= kMinUsefulBlock || ds == shard_elems)) return ds;
  return std::min(shard_elems, kTargetBlock);
}

}  // namespace

BlockPlan::BlockPlan(size_t num_shards, size_t shard_elems)
    : BlockPlan(num_shards, shard_elems, shard_elems == 0 ? 1 : plan_block_size(shard_elems)) {}

BlockPlan::BlockPlan(size_t num_shards, size_t shard_elems, size_t block_size)
    : num_shards_(num_shards), shard_elems_(shard_elems), block_size_(block_size) {
  if (num_shards == 0 || shard_elems == 0)
    throw std::invalid_argument("BlockPlan: " + std::to_string(num_shards) + " shards of " +
                                std::to_string(shard_elems) + " elements: both must be at least 1");
  block_size_ = std::min(block_size, shard_elems);
  (void)shard_layout(QuantBits::Int4).blocks();  // validates the block size
  blocks_per_shard_ = (shard_elems_ + block_size_ - 1) / block_size_;
}

QuantBlock BlockPlan::block(size_t b) const {
  if (b >= num_blocks())
    throw std::out_of_range("BlockPlan::block: block " + std::to_string(b) + " of " + std::to_string(num_blocks()));
  const size_t shard = b / blocks_per_shard_, k = b % blocks_per_shard_;
  const size_t begin = k * block_size_;
  return {shard, shard * shard_elems_ + begin, std::min(block_size_, shard_elems_ - begin)};
}

}  // namespace zt::quant
