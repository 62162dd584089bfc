// QuantizedReduce: ZeRO++'s qgZ gradient reduction (zero_quantized_gradients) for a job of k nodes
// of n ranks (world rank = node · n + local). One bucket's reduce-scatter becomes two int4
// all-to-alls with an fp32 sum between them:
//   1. each rank packs every owner's elements of the bucket (padded to the bucket's largest owner,
//      so every record has one size: the GradReducer's qgZ buckets hold equal parts of every
//      owner, cut_balanced_buckets), quantizes each to int4 with one fp32 scale per block, and
//      sends the owners of local index d (d, d + n, ...) to its node's rank d;
//   2. rank d dequantizes and adds, in fp32 and in local-rank order, its node's n contributions
//      for each of those k owners, quantizes each sum to int4 again and sends the one for the owner
//      on node i to node i's rank d;
//   3. each owner adds the k nodes' partial sums and writes the result over its own elements, where
//      the exact reduce-scatter leaves them.
// The result is the SUM, as the exact reduce-scatter's (the engine's mean factor applies after,
// to both alike). DeepSpeed's quantized path never pre-divides: it divides the sum of the k node
// sums by k alone (runtime/comm/coalesced_collectives.py:75, all_to_all_quant_reduce), so its
// quantized tensors come out n times the mean, while its 1-D tensors take the exact fallback,
// reduce_scatter_coalesced, which pre-divides by the world (l.43 → l.201) and gives the mean, in the
// same step (stage3.py:1388-1391; gradient_predivide_factor must be 1 there, l.316). Adam hides the
// factor; clipping and the gradient norm do not. With one rank per node the first hop is skipped (nothing to add inside a
// node); on one node qgZ is off (the engine says so). Host backend buffers (fp32) only.
//
// Per element the error is bounded by the two roundings: half an int4 step of every contributor's
// block (absmax / 7 / 2 each) plus half a step of each node sum's block, plus fp32 roundings.
// Measured, not assumed: a sample of the blocks each rank quantizes (every kSampleEvery-th, counted
// across calls, in both hops) is dequantized beside its exact input, relative to the block's absmax.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectives/communicator.h"
#include "kernels/quant/block_quant.h"
#include "runtime/zero/memory_ledger.h"
#include "runtime/zero/quant_error.h"

namespace zt {

// One owner's record in a bucket whose largest owner holds `elems` elements: int4 levels (two per
// byte), then one fp32 scale per block of `block` elements (the last block shorter), each padded
// to whole 8-byte words (the calls move int64 bit patterns).
struct QgzRecord {
  size_t elems = 0, block = 0, level_words = 0, scale_words = 0;
  static QgzRecord for_elems(size_t elems, size_t block);
  size_t words() const { return level_words + scale_words; }
  size_t bytes() const { return words() * sizeof(int64_t); }
  quant::QuantLayout layout() const { return {quant::QuantBits::Int4, elems, block}; }
};

// A collective in two stages: advance() completes the first (waiting for it) and issues the
// second without waiting for it; wait() completes whatever is left. advance() is idempotent.
class TwoHopHandle : public CommHandle {
 public:
  virtual void advance() = 0;
};

class QuantizedReduce {
 public:
  // Elements per scale. DeepSpeed cuts each 2-D gradient into max(rows, cols, world) groups, so its
  // blocks are the tensor's shorter side: the model's width for every matrix of GPT-2 and most of
  // Llama's, Hkv·hd for the k and v projections under grouped-query attention. A bucket here spans
  // tensors, so it takes one block for all, the shortest: block_for_width(shortest_matrix_side()),
  // finer than DeepSpeed's for the wider matrices (more scales, never a coarser block). GPT-2's wpe
  // ([T, C]) is left at C where T < C (DeepSpeed's block there would be T).
  static size_t block_for_width(int64_t width);  // width rounded up to a multiple of 8 (int4 bytes)
  static constexpr uint64_t kSampleEvery = 16;
  // The bound on |deq - x| / absmax of its block for one int4 rounding: half a step (absmax / 7 / 2),
  // the scale's fp32 rounding and half an fp32 ulp of the result, each rounded up to 2^-23.
  static constexpr double kBoundRel = 0.5 / 7 * (1 + 0x1p-23) + 0x1p-23;

  QuantizedReduce() = default;
  // node: this rank's node's ranks (n of them; null when n == 1); cross: the ranks of this rank's
  // local index on every node (k > 1 of them). Both stay alive while this object is used.
  // block: elements per scale (a multiple of 8).
  QuantizedReduce(MemoryLedger& ledger, Communicator* node, Communicator& cross, size_t block);
  bool on() const { return cross_ != nullptr; }

  // The two all-to-alls' algorithm bytes (as the communicators count them) for a bucket whose
  // largest owner holds `elems` quantized elements; each split into the levels' and scales' words.
  struct WireBytes {
    uint64_t intra_levels = 0, intra_scales = 0, inter_levels = 0, inter_scales = 0;
    uint64_t intra() const { return intra_levels + intra_scales; }
    uint64_t inter() const { return inter_levels + inter_scales; }
  };
  static WireBytes wire_bytes(size_t elems, size_t block, int ranks_per_node, int nodes);
  size_t block() const { return block_; }

  // segments: fp32 elements with world-rank owners, the same counts and owners on every rank.
  // Each owner's segments receive the sum of every rank's copies (within the bound); the other
  // ranks' copies keep their values. The handle's wait() runs the sum between the hops, the second
  // hop and the last sum. A bucket holding nothing issues no call. Every rank must wait() the
  // handle (the second hop is issued there); dropping it unwaited leaves the peers in that hop.
  std::shared_ptr<TwoHopHandle> reduce_async(const std::vector<Segment>& segments);

  QuantError take_error();

 private:
  friend class QgzHandle;
  // Quantizes `x` (rec.elems values) into the record at `out`, sampling its blocks' error.
  void quantize_record(const float* x, const QgzRecord& rec, uint8_t* out);

  MemoryLedger* ledger_ = nullptr;
  Communicator* node_ = nullptr;
  Communicator* cross_ = nullptr;
  size_t block_ = 0;
  QuantError error_;
  uint64_t blocks_ = 0;  // blocks quantized so far: which ones are sampled
};

}  // namespace zt
