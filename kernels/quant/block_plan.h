// BlockPlan: how a buffer of N equal shards (one per rank) is cut into quantization blocks, each
// with its own scale, so that no block straddles two ranks' shards: every shard is split into
// whole blocks of block_size() elements and a possibly shorter last block. Pure arithmetic,
// computed once from the shard size; plus deepspeed_group_size(), DeepSpeed's rule for the block
// size of quantized weights, which the plan follows where it gives a useful block.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/quant/block_quant.h"

namespace zt::quant {

// DeepSpeed's target group size for quantized weights (zero_quantized_weights, CUDAQuantizer in
// deepspeed/runtime/zero/partition_parameters.py) and the hard limit it asserts.
inline constexpr size_t kTargetBlock = 8000;
inline constexpr size_t kMaxBlock = 16000;
// Blocks smaller than this waste too much on scales (4 bytes each): the plan does not take them.
inline constexpr size_t kMinUsefulBlock = kTargetBlock / 2;

// DeepSpeed's group size for a tensor of n elements: groups starts at ceil(n / 8000) and grows by
// one until n / groups is a whole multiple of 8; the block is n / groups (<= 8000, a multiple of 8,
// dividing n exactly). DeepSpeed then doubles groups while the block stays above 8000, which never
// happens after the first loop. Returns 0 where DeepSpeed refuses the tensor: n not a multiple of 8.
size_t deepspeed_group_size(size_t n);

// One block: elements [begin, begin + size) of the whole buffer, inside shard `shard`.
struct QuantBlock {
  size_t shard = 0;
  size_t begin = 0;
  size_t size = 0;
};

class BlockPlan {
 public:
  // num_shards >= 1 shards of shard_elems >= 1 elements each (throws std::invalid_argument else).
  // Block size: DeepSpeed's group size of one shard when that is at least kMinUsefulBlock or the
  // whole shard (shards of <= 8000 elements that are a multiple of 8); otherwise min(shard, 8000)
  // with a shorter last block (shards that are not a multiple of 8, or whose only divisors make
  // small blocks, e.g. 8 * a large prime).
  BlockPlan(size_t num_shards, size_t shard_elems);
  // A plan with a chosen block size (a multiple of 8, or >= shard_elems): tests and benches.
  BlockPlan(size_t num_shards, size_t shard_elems, size_t block_size);

  size_t num_shards() const { return num_shards_; }
  size_t shard_elems() const { return shard_elems_; }
  size_t block_size() const { return block_size_; }
  size_t blocks_per_shard() const { return blocks_per_shard_; }
  size_t num_blocks() const { return num_shards_ * blocks_per_shard_; }
  size_t total_elems() const { return num_shards_ * shard_elems_; }
  // Elements in the last block of every shard (== block_size() when it divides the shard).
  size_t last_block_size() const { return shard_elems_ - (blocks_per_shard_ - 1) * block_size_; }

  // Block b (0 <= b < num_blocks()), numbered shard by shard.
  QuantBlock block(size_t b) const;
  // The quantizer's layout for one shard: quantize shard r from element r * shard_elems() into
  // shard_q_bytes(bits) bytes at r * shard_q_bytes(bits) and blocks_per_shard() scales at
  // r * blocks_per_shard().
  QuantLayout shard_layout(QuantBits bits) const { return {bits, shard_elems_, block_size_}; }
  size_t shard_q_bytes(QuantBits bits) const { return shard_layout(bits).q_bytes(); }

 private:
  size_t num_shards_, shard_elems_, block_size_, blocks_per_shard_;
};

}  // namespace zt::quant
