// QuantizedGather: quantize a shard, gather levels and scales, dequantize on wait.
#include "runtime/zero/quantized_gather.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/quant/block_plan.h"
#include "runtime/zero/precision_emulation.h"

namespace zt {

namespace {

constexpr size_t kWord = sizeof(int64_t);

size_t level_words(const quant::BlockPlan& plan) {
  return (plan.shard_q_bytes(quant::QuantBits::Int8) + kWord - 1) / kWord;
}

// The two calls in flight and their buffers; wait() finishes them and dequantizes into `full`.
class DequantizingHandle final : public CommHandle {
 public:
  DequantizingHandle(MemoryLedger& ledger, QuantError& error, const quant::BlockPlan& plan, const float* shard,
                     float* full, int rank, DType round_to, void* levels, void* scales, uint64_t sample_phase)
      : ledger_(ledger), error_(error), plan_(plan), shard_(shard), full_(full), rank_(rank), round_to_(round_to),
        levels_(levels), scales_(scales), phase_(sample_phase) {}
  ~DequantizingHandle() override {
    try {
      finish();
    } catch (...) {  // a failed collective was reported by the wait that saw it
    }
    ledger_.free(levels_);
    ledger_.free(scales_);
  }
  void set_calls(CommHandlePtr levels, CommHandlePtr scales) {
    levels_call_ = std::move(levels);
    scales_call_ = std::move(scales);
  }
  void wait() override { finish(); }
  bool done() override { return finished_ || (levels_call_->done() && scales_call_->done()); }

 private:
  void finish() {
    if (finished_) return;
    finished_ = true;
    levels_call_->wait();
    scales_call_->wait();
    const quant::QuantLayout layout = plan_.shard_layout(quant::QuantBits::Int8);
    const size_t S = plan_.shard_elems(), words = level_words(plan_), bps = plan_.blocks_per_shard();
    const auto* q = static_cast<const uint8_t*>(levels_);
    const auto* sc = static_cast<const float*>(scales_);
    for (size_t r = 0; r < plan_.num_shards(); ++r)
      quant::dequantize(q + r * words * kWord, sc + r * bps, layout, full_ + r * S);
    measure(full_ + size_t(rank_) * S);
    if (round_to_ != DType::F32) round_to_precision(full_, plan_.total_elems(), round_to_);
  }
  // The sampled blocks of this rank's shard: dequantized beside exact, relative to the block's absmax.
  void measure(const float* deq) {
    const size_t bps = plan_.blocks_per_shard(), B = plan_.block_size(), S = plan_.shard_elems();
    // Block b is sampled when it is the (k * kSampleEvery)-th block this rank quantized.
    const uint64_t every = QuantizedGather::kSampleEvery;
    for (size_t b = size_t((every - phase_ % every) % every); b < bps; b += every) {
      const size_t begin = b * B, n = std::min(B, S - begin);
      double absmax = 0;
      for (size_t i = 0; i < n; ++i) absmax = std::max(absmax, double(std::fabs(shard_[begin + i])));
      if (!std::isfinite(absmax)) continue;  // a refused block: counted as bad, not as error
      for (size_t i = 0; i < n; ++i) {
        const double rel = absmax > 0 ? std::fabs(double(deq[begin + i]) - double(shard_[begin + i])) / absmax : 0.0;
        error_.max_rel = std::max(error_.max_rel, rel);
        error_.sum_sq_rel += rel * rel;
      }
      error_.elements += n;
    }
  }

  MemoryLedger& ledger_;
  QuantError& error_;
  quant::BlockPlan plan_;
  const float* shard_;
  float* full_;
  int rank_;
  DType round_to_;
  void* levels_;
  void* scales_;
  uint64_t phase_;
  CommHandlePtr levels_call_, scales_call_;
  bool finished_ = false;
};

}  // namespace

double QuantError::rms_rel() const { return elements ? std::sqrt(sum_sq_rel / double(elements)) : 0.0; }

void QuantError::add(const QuantError& o) {
  max_rel = std::max(max_rel, o.max_rel);
  sum_sq_rel += o.sum_sq_rel;
  elements += o.elements;
  gathers += o.gathers;
  blocks += o.blocks;
  bad_blocks += o.bad_blocks;
}

QuantizedGather::WireBytes QuantizedGather::wire_bytes(size_t padded, int group) {
  const quant::BlockPlan plan(size_t(group), padded / size_t(group));
  return {uint64_t(group) * level_words(plan) * kWord, uint64_t(plan.num_blocks()) * sizeof(float)};
}

CommHandlePtr QuantizedGather::gather_async(Communicator& c, const float* shard, float* full, size_t padded,
                                            DType round_to) {
  const size_t G = size_t(c.world_size());
  if (padded % G != 0)
    throw std::invalid_argument("QuantizedGather: a unit of " + std::to_string(padded) +
                                " elements does not split into " + std::to_string(G) + " shards");
  const quant::BlockPlan plan(G, padded / G);
  const size_t words = level_words(plan), bps = plan.blocks_per_shard(), r = size_t(c.rank());
  void* levels = ledger_->alloc(MemCategory::CommBuffers, G * words * kWord);  // zero-filled: the pad bytes too
  void* scales = ledger_->alloc(MemCategory::CommBuffers, plan.num_blocks() * sizeof(float));
  auto* my_levels = static_cast<uint8_t*>(levels) + r * words * kWord;
  float* my_scales = static_cast<float*>(scales) + r * bps;
  const quant::QuantStatus st = quant::quantize(shard, plan.shard_layout(quant::QuantBits::Int8), my_levels, my_scales);
  error_.gathers += 1;
  error_.blocks += bps;
  error_.bad_blocks += st.bad_blocks;
  auto h = std::make_shared<DequantizingHandle>(*ledger_, error_, plan, shard, full, int(r), round_to, levels, scales,
                                                blocks_);
  blocks_ += bps;
  h->set_calls(c.all_gather_async(my_levels, levels, G * words, DType::I64),
               c.all_gather_async(my_scales, scales, plan.num_blocks(), DType::F32));
  return h;
}

QuantError QuantizedGather::take_error() {
  QuantError e = error_;
  error_ = QuantError{};
  return e;
}

}  // namespace zt
