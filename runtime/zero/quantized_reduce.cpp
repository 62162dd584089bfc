// QuantizedReduce: pack and quantize by owner, the node all-to-all, sum and requantize, the cross
// all-to-all, the owner's sum.
#include "runtime/zero/quantized_reduce.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>

#include "base/clock.h"

namespace zt {

namespace {

constexpr size_t kQgzWord = sizeof(int64_t);

size_t words_for(size_t bytes) { return (bytes + kQgzWord - 1) / kQgzWord; }

const float* scales_of(const uint8_t* record, const QgzRecord& r) {
  return reinterpret_cast<const float*>(record + r.level_words * kQgzWord);
}

// A reduce with nothing in it: complete at once.
class DoneHandle final : public TwoHopHandle {
 public:
  void wait() override {}
  bool done() override { return true; }
  void advance() override {}
};

}  // namespace

QgzRecord QgzRecord::for_elems(size_t elems, size_t block) {
  QgzRecord r;
  r.elems = elems;
  r.block = std::min(elems, block);
  r.level_words = words_for(r.layout().q_bytes());
  r.scale_words = words_for(r.layout().blocks() * sizeof(float));
  return r;
}

// The bucket in flight: its buffers (one ledger block), the owners' segments, the call of the hop
// now running. wait() finishes whatever is left; the destructor only waits for the call.
class QgzHandle final : public TwoHopHandle {
 public:
  QgzHandle(QuantizedReduce& q, std::vector<Segment> mine, size_t elems)
      : q_(q), mine_(std::move(mine)), rec_(QgzRecord::for_elems(elems, q.block_)) {
    n_ = q.node_ ? size_t(q.node_->world_size()) : 1;
    k_ = size_t(q.cross_->world_size());
    const size_t rb = rec_.bytes(), fb = (rec_.elems * sizeof(float) + kQgzWord - 1) / kQgzWord * kQgzWord;
    const size_t hop1 = n_ > 1 ? n_ * k_ * rb : 0;  // one rank per node: no first hop
    bytes_ = 2 * hop1 + 2 * k_ * rb + 2 * fb;
    base_ = static_cast<uint8_t*>(q.ledger_->alloc(MemCategory::CommBuffers, bytes_));  // zero-filled
    send1_ = base_;
    recv1_ = send1_ + hop1;
    send2_ = recv1_ + hop1;
    recv2_ = send2_ + k_ * rb;
    pack_ = reinterpret_cast<float*>(recv2_ + k_ * rb);
    sum_ = reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(pack_) + fb);
  }
  ~QgzHandle() override {
    try {
      if (call_) call_->wait();  // the buffers must outlive the call; no summing on the way out
    } catch (...) {  // a failed collective was reported by the wait that saw it
    }
    q_.ledger_->free(base_);
  }

  // Hop 1 issued (or, with one rank per node, hop 2): the first quantization of every owner.
  void start(const std::vector<std::vector<Segment>>& by_owner) {
    const auto t0 = Clock::now();
    const size_t rb = rec_.bytes();
    for (size_t node = 0; node < k_; ++node)
      for (size_t local = 0; local < n_; ++local) {
        pack(by_owner[node * n_ + local]);
        // Slot local·k + node: the chunk for the node's rank `local` holds the owners of that local index.
        uint8_t* slot = (n_ > 1 ? send1_ + (local * k_ + node) * rb : send2_ + node * rb);
        q_.quantize_record(pack_, rec_, slot);
      }
    q_.error_.quantize_s += seconds_since(t0);
    q_.error_.calls += 1;
    const QuantizedReduce::WireBytes w = QuantizedReduce::wire_bytes(rec_.elems, rec_.block, int(n_), int(k_));
    q_.error_.level_bytes += w.intra_levels + w.inter_levels;
    q_.error_.scale_bytes += w.intra_scales + w.inter_scales;
    if (n_ > 1) {
      call_ = q_.node_->all_to_all_async(send1_, recv1_, n_ * k_ * rec_.words(), DType::I64);
    } else {
      call_ = q_.cross_->all_to_all_async(send2_, recv2_, k_ * rec_.words(), DType::I64);
      hop_ = 2;
    }
  }

  void wait() override { guarded([&] { finish(); }); }
  void advance() override { guarded([&] { second_hop(); }); }
  bool done() override { return finished_; }

 private:
  // Runs a stage; a failure is kept and rethrown by every later wait or advance, as other handles do.
  template <class Stage>
  void guarded(Stage&& stage) {
    if (finished_) return;
    if (failed_) std::rethrow_exception(failed_);
    try {
      stage();
    } catch (...) {
      failed_ = std::current_exception();
      throw;
    }
  }

  // Waits for the first hop, adds the node's contributions, requantizes, issues the second hop.
  void second_hop() {
    const size_t rb = rec_.bytes();
    const quant::QuantLayout layout = rec_.layout();
    if (hop_ == 1) {
      call_->wait();
      auto t0 = Clock::now();
      // Chunk j (from the node's rank j) holds, for each node i, this local index's owner on node i.
      for (size_t node = 0; node < k_; ++node) {
        std::fill(sum_, sum_ + rec_.elems, 0.0f);
        for (size_t j = 0; j < n_; ++j) {
          const uint8_t* r = recv1_ + (j * k_ + node) * rb;
          quant::dequantize_add(r, scales_of(r, rec_), layout, sum_);
        }
        q_.error_.dequantize_s += seconds_since(t0);
        t0 = Clock::now();
        q_.quantize_record(sum_, rec_, send2_ + node * rb);
        q_.error_.quantize_s += seconds_since(t0);
        t0 = Clock::now();
      }
      call_ = q_.cross_->all_to_all_async(send2_, recv2_, k_ * rec_.words(), DType::I64);
      hop_ = 2;
    }
  }

  void finish() {
    second_hop();
    const size_t rb = rec_.bytes();
    const quant::QuantLayout layout = rec_.layout();
    call_->wait();
    const auto t0 = Clock::now();
    std::fill(sum_, sum_ + rec_.elems, 0.0f);
    for (size_t node = 0; node < k_; ++node) {
      const uint8_t* r = recv2_ + node * rb;
      quant::dequantize_add(r, scales_of(r, rec_), layout, sum_);
    }
    size_t at = 0;
    for (const Segment& s : mine_) {
      std::memcpy(s.data, sum_ + at, s.count * sizeof(float));
      at += s.count;
    }
    q_.error_.dequantize_s += seconds_since(t0);
    finished_ = true;
  }

  // An owner's segments, one after another, zero-padded to the record's elements.
  void pack(const std::vector<Segment>& segs) {
    size_t at = 0;
    for (const Segment& s : segs) {
      std::memcpy(pack_ + at, s.data, s.count * sizeof(float));
      at += s.count;
    }
    std::fill(pack_ + at, pack_ + rec_.elems, 0.0f);
  }

  QuantizedReduce& q_;
  std::vector<Segment> mine_;  // this rank's own segments: where the result goes
  QgzRecord rec_;
  size_t n_ = 1, k_ = 1, bytes_ = 0;
  uint8_t *base_ = nullptr, *send1_ = nullptr, *recv1_ = nullptr, *send2_ = nullptr, *recv2_ = nullptr;
  float *pack_ = nullptr, *sum_ = nullptr;
  CommHandlePtr call_;
  int hop_ = 1;
  bool finished_ = false;
  std::exception_ptr failed_;  // a failed hop or sum: the bucket cannot finish
};

size_t QuantizedReduce::block_for_width(int64_t width) { return size_t(std::max<int64_t>(1, (width + 7) / 8)) * 8; }

QuantizedReduce::QuantizedReduce(MemoryLedger& ledger, Communicator* node, Communicator& cross, size_t block)
    : ledger_(&ledger), node_(node), cross_(&cross), block_(block) {
  if (block == 0 || block % 8 != 0)
    throw std::invalid_argument("QuantizedReduce: the block of " + std::to_string(block) +
                                " elements must be a positive multiple of 8 (int4 blocks start on a byte)");
  if (cross.world_size() < 2)
    throw std::invalid_argument("QuantizedReduce: qgZ needs more than one node (the cross group has " +
                                std::to_string(cross.world_size()) + " rank)");
}

QuantizedReduce::WireBytes QuantizedReduce::wire_bytes(size_t elems, size_t block, int ranks_per_node, int nodes) {
  WireBytes w;
  if (elems == 0) return w;
  const QgzRecord r = QgzRecord::for_elems(elems, block);
  const uint64_t n = uint64_t(ranks_per_node), k = uint64_t(nodes);
  if (n > 1) {
    w.intra_levels = n * k * r.level_words * kQgzWord;
    w.intra_scales = n * k * r.scale_words * kQgzWord;
  }
  w.inter_levels = k * r.level_words * kQgzWord;
  w.inter_scales = k * r.scale_words * kQgzWord;
  return w;
}

std::shared_ptr<TwoHopHandle> QuantizedReduce::reduce_async(const std::vector<Segment>& segments) {
  const size_t n = node_ ? size_t(node_->world_size()) : 1, W = n * size_t(cross_->world_size());
  const int me = cross_->rank() * int(n) + (node_ ? node_->rank() : 0);
  std::vector<std::vector<Segment>> by_owner(W);
  std::vector<size_t> owned(W, 0);
  for (const Segment& s : segments) {
    if (s.owner < 0 || size_t(s.owner) >= W)
      throw std::invalid_argument("QuantizedReduce: a segment's owner " + std::to_string(s.owner) + " is outside the " +
                                  std::to_string(W) + " ranks");
    if (!s.count) continue;
    by_owner[size_t(s.owner)].push_back(s);
    owned[size_t(s.owner)] += s.count;
  }
  const size_t elems = *std::max_element(owned.begin(), owned.end());
  if (elems == 0) return std::make_shared<DoneHandle>();
  auto h = std::make_shared<QgzHandle>(*this, by_owner[size_t(me)], elems);
  h->start(by_owner);
  return h;
}

void QuantizedReduce::quantize_record(const float* x, const QgzRecord& rec, uint8_t* out) {
  const quant::QuantLayout layout = rec.layout();
  const quant::QuantStatus st = quant::quantize(x, layout, out, reinterpret_cast<float*>(out + rec.level_words * kQgzWord));
  const size_t blocks = layout.blocks();
  error_.blocks += blocks;
  error_.bad_blocks += st.bad_blocks;
  const float* scales = scales_of(out, rec);
  std::vector<float> deq(rec.block);
  for (size_t b = QuantError::first_sampled_block(blocks_, kSampleEvery); b < blocks; b += kSampleEvery) {
    const size_t begin = b * rec.block, m = std::min(rec.block, rec.elems - begin);
    double absmax = 0;
    if (!QuantError::finite_absmax(x + begin, m, absmax)) continue;
    quant::dequantize(out + begin / 2, scales + b, {quant::QuantBits::Int4, m, m}, deq.data());
    error_.add_sample(x + begin, deq.data(), m, absmax);
  }
  blocks_ += blocks;
}

QuantError QuantizedReduce::take_error() {
  QuantError e = error_;
  error_ = QuantError{};
  return e;
}

}  // namespace zt
