// QuantizedGather: ZeRO++'s qwZ parameter all-gather (zero_quantized_weights). Each rank quantizes
// its shard of a padded unit to symmetric int8 with one fp32 scale per block (kernels/quant: the
// blocks never straddle two shards, BlockPlan's DeepSpeed-sized blocks), and one all-gather over
// the group sends each rank's record — its levels, then its scales, each padded to whole 8-byte
// words, as int64 bit patterns (an all-gather copies bits). DeepSpeed sends levels and scales in two
// calls; one call pays the per-call latency once, which at 100 Gb/s and 10 us per ring step is
// most of a small unit's cost. The handle's wait()
// dequantizes every rank's part, this rank's too, into the unit's fp32 buffer, then rounds it to
// the training precision where the backend emulates a 16-bit one. The fp32 master and the
// optimizer never see quantized values: only what forward and backward compute with is.
// On the host backend only (the CUDA quantizer is not wired into the gather).
//
// The error is measured, not assumed: on a sample of this rank's blocks (every kSampleEvery-th block
// it quantizes, counted across calls) the dequantized value is compared with the exact one, relative to
// the block's absmax; take_error() hands the maximum and the sum of squares since the last take.
// "Exact" is the gather's source: for hpZ's secondary gathers that is the secondary copy, itself
// dequantized once when the unit was released, so those samples are the second quantization's error
// alone (against the fp32 master a secondary-gathered element may be off by up to two half-steps).
#pragma once

#include <cstddef>
#include <cstdint>

#include "collectives/communicator.h"
#include "runtime/zero/memory_ledger.h"
#include "runtime/zero/quant_error.h"

namespace zt {

class QuantizedGather {
 public:
  static constexpr uint64_t kSampleEvery = 16;
  // The bound on |deq - x| / absmax of its block: half a step (absmax / 127 / 2), the scale's fp32
  // rounding (at most 2^-24 of it, relative) and half an fp32 ulp of the dequantized value (at most
  // 2^-24 of the absmax); rounded up to 2^-23 each.
  static constexpr double kBoundRel = 0.5 / 127 * (1 + 0x1p-23) + 0x1p-23;

  QuantizedGather() = default;
  explicit QuantizedGather(MemoryLedger* ledger) : ledger_(ledger) {}
  bool on() const { return ledger_ != nullptr; }

  // What one gather of a unit of `padded` elements over `group` ranks puts on the wire, as the
  // communicator counts it (algorithm bytes: the gathered size of the call), split into the
  // levels' words and the scales' words.
  struct WireBytes {
    uint64_t levels = 0, scales = 0;
    uint64_t total() const { return levels + scales; }
  };
  static WireBytes wire_bytes(size_t padded, int group);

  // Gathers the unit into `full` (padded fp32 elements) over `c` from this rank's shard `shard`
  // (padded / c.world_size() fp32 elements); `round_to` is the precision the values are rounded
  // to after dequantizing (F32: none). The handle's wait() completes both calls and dequantizes.
  CommHandlePtr gather_async(Communicator& c, const float* shard, float* full, size_t padded, DType round_to);

  QuantError take_error();

 private:
  MemoryLedger* ledger_ = nullptr;
  QuantError error_;
  uint64_t blocks_ = 0;  // blocks quantized so far: which ones are sampled
};

}  // namespace zt
