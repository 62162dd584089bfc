// QuantizedGather: quantize a shard, gather levels and scales, dequantize on wait.
#include "runtime/zero/quantized_gather.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "base/clock.h"
#include "kernels/quant/block_plan.h"
#include "runtime/zero/precision_emulation.h"

namespace zt {

namespace {

constexpr size_t kWord = sizeof(int64_t);

// One rank's record in the gather: its int8 levels, then its fp32 scales, each padded to whole
// 8-byte words (the call moves int64 bit patterns).
struct Record {
  size_t level_words, scale_words;
  explicit Record(const quant::BlockPlan& plan)
      : level_words((plan.shard_q_bytes(quant::QuantBits::Int8) + kWord - 1) / kWord),
        scale_words((plan.blocks_per_shard() * sizeof(float) + kWord - 1) / kWord) {}
  size_t words() const { return level_words + scale_words; }
  size_t bytes() const { return words() * kWord; }
};

// The call in flight and its buffer; wait() finishes it and dequantizes every record into `full`.
class DequantizingHandle final : public CommHandle {
 public:
  DequantizingHandle(MemoryLedger& ledger, QuantError& error, const quant::BlockPlan& plan, const float* shard,
                     float* full, int rank, DType round_to, void* records, uint64_t sample_phase)
      : ledger_(ledger), error_(error), plan_(plan), shard_(shard), full_(full), rank_(rank), round_to_(round_to),
        records_(records), phase_(sample_phase) {}
  ~DequantizingHandle() override {
    try {
      if (call_) call_->wait();  // the buffer must outlive the call; no dequantizing on the way out
    } catch (...) {  // a failed collective was reported by the wait that saw it
    }
    ledger_.free(records_);
  }
  void set_call(CommHandlePtr call) { call_ = std::move(call); }
  void wait() override { finish(); }
  // True only once `full` holds the dequantized values: a finished call is dequantized here (what
  // wait() would do at once), so a caller that polls never reads the records as the result.
  bool done() override {
    if (finished_) return true;
    if (!call_->done()) return false;
    finish();
    return true;
  }

 private:
  void finish() {
    if (finished_) return;
    call_->wait();  // a failure rethrows here on every wait, as other handles do
    const auto t0 = Clock::now();
    const quant::QuantLayout layout = plan_.shard_layout(quant::QuantBits::Int8);
    const Record rec(plan_);
    const size_t S = plan_.shard_elems();
    for (size_t r = 0; r < plan_.num_shards(); ++r) {
      const auto* q = static_cast<const uint8_t*>(records_) + r * rec.bytes();
      quant::dequantize(q, reinterpret_cast<const float*>(q + rec.level_words * kWord), layout, full_ + r * S);
    }
    measure(full_ + size_t(rank_) * S);
    if (round_to_ != DType::F32) round_to_precision(full_, plan_.total_elems(), round_to_);
    error_.dequantize_s += seconds_since(t0);
    finished_ = true;
  }
  // The sampled blocks of this rank's shard: dequantized beside exact, relative to the block's absmax.
  void measure(const float* deq) {
    const size_t bps = plan_.blocks_per_shard(), B = plan_.block_size(), S = plan_.shard_elems();
    const uint64_t every = QuantizedGather::kSampleEvery;
    for (size_t b = QuantError::first_sampled_block(phase_, every); b < bps; b += every) {
      const size_t begin = b * B, n = std::min(B, S - begin);
      double absmax = 0;
      if (QuantError::finite_absmax(shard_ + begin, n, absmax)) error_.add_sample(shard_ + begin, deq + begin, n, absmax);
    }
  }

  MemoryLedger& ledger_;
  QuantError& error_;
  quant::BlockPlan plan_;
  const float* shard_;
  float* full_;
  int rank_;
  DType round_to_;
  void* records_;
  uint64_t phase_;
  CommHandlePtr call_;
  bool finished_ = false;
};

}  // namespace

QuantizedGather::WireBytes QuantizedGather::wire_bytes(size_t padded, int group) {
  const Record rec(quant::BlockPlan(size_t(group), padded / size_t(group)));
  return {uint64_t(group) * rec.level_words * kWord, uint64_t(group) * rec.scale_words * kWord};
}

CommHandlePtr QuantizedGather::gather_async(Communicator& c, const float* shard, float* full, size_t padded,
                                            DType round_to) {
  const size_t G = size_t(c.world_size());
  if (padded % G != 0)
    throw std::invalid_argument("QuantizedGather: a unit of " + std::to_string(padded) +
                                " elements does not split into " + std::to_string(G) + " shards");
  const quant::BlockPlan plan(G, padded / G);
  const Record rec(plan);
  const size_t bps = plan.blocks_per_shard(), r = size_t(c.rank());
  void* records = ledger_->alloc(MemCategory::CommBuffers, G * rec.bytes());  // zero-filled: the pad bytes too
  // The handle owns the buffer from here (freed on every path); the call is set only once issued.
  auto h = std::make_shared<DequantizingHandle>(*ledger_, error_, plan, shard, full, int(r), round_to, records, blocks_);
  auto* mine = static_cast<uint8_t*>(records) + r * rec.bytes();
  const auto t0 = Clock::now();
  const quant::QuantStatus st = quant::quantize(shard, plan.shard_layout(quant::QuantBits::Int8), mine,
                                                reinterpret_cast<float*>(mine + rec.level_words * kWord));
  error_.quantize_s += seconds_since(t0);
  error_.calls += 1;
  error_.level_bytes += G * rec.level_words * kWord;
  error_.scale_bytes += G * rec.scale_words * kWord;
  error_.blocks += bps;
  error_.bad_blocks += st.bad_blocks;
  blocks_ += bps;
  h->set_call(c.all_gather_async(mine, records, G * rec.words(), DType::I64));  // in place: the record is at its slot
  return h;
}

QuantError QuantizedGather::take_error() {
  QuantError e = error_;
  error_ = QuantError{};
  return e;
}

}  // namespace zt
