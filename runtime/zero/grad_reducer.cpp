// GradReducer: bucketed gradient reduction in backward order, with each stage's timing.
#include "runtime/zero/grad_reducer.h"

#include <algorithm>
#include <exception>
#include <stdexcept>
#include <string>

namespace zt {

namespace {
// Backward walk: unit u is done at position U-1-u.
int position_of(int u, int U) { return U - 1 - u; }

// qgZ's exact part and quantized part of one bucket, waited as one.
class BothHandle final : public CommHandle {
 public:
  BothHandle(CommHandlePtr exact, CommHandlePtr quantized) : exact_(std::move(exact)), quantized_(std::move(quantized)) {}
  // Both are waited whatever the first does (every rank must take part in both), then the first
  // failure is rethrown.
  void wait() override {
    std::exception_ptr first;
    for (const CommHandlePtr& h : {exact_, quantized_}) {
      if (!h) continue;
      try {
        h->wait();
      } catch (...) {
        if (!first) first = std::current_exception();
      }
    }
    if (first) std::rethrow_exception(first);
  }
  bool done() override { return (!exact_ || exact_->done()) && quantized_->done(); }

 private:
  CommHandlePtr exact_, quantized_;
};

// The elements qgZ sends exactly: each unit's 1-D tensors (DeepSpeed's fallback for them).
std::vector<std::vector<BucketPiece>> exact_tensor_ranges(const ShardMap& map) {
  std::vector<std::vector<BucketPiece>> r(size_t(map.units()));
  for (int u = 0; u < map.units(); ++u)
    for (const TensorSpec& t : map.unit(u).tensors)
      if (t.dims < 2) r[size_t(u)].push_back({u, t.offset, t.size});
  return r;
}
}  // namespace

QuantError GradReducer::take_quant_error() {
  QuantError e = qgz_.take_error();
  e.exact_elements = exact_elements_;
  exact_elements_ = 0;
  return e;
}

GradReducer::GradReducer(ZeroContext& z, UnitBufferPool& pool, const ReduceOptions& o)
    : z_(z), pool_(pool), overlap_(o.overlap) {
  const Partition& p = z.part;
  const int U = p.units();
  std::vector<int> order;
  std::vector<int64_t> len(static_cast<size_t>(U));
  for (int u = U - 1; u >= 0; --u) order.push_back(u);
  for (int u = 0; u < U; ++u) {
    len[size_t(u)] = p.shard(u).padded;
    grads_.push_back(z.ledger.alloc(MemCategory::Grads, size_t(p.unit(u).grad_len) * z.element_bytes()));
  }
  stream_ = BucketStream(order, len, o.bucket_elems, o.quantized_gradients ? p.world_size() : 0);
  buckets_of_unit_.assign(size_t(U), 0);
  for (const Bucket& b : stream_.buckets())
    for (const BucketPiece& piece : b.pieces) ++buckets_of_unit_[size_t(piece.unit)];
  full_.assign(size_t(U), nullptr);
  pending_.assign(size_t(U), 0);
  if (o.quantized_gradients && p.reduces_each_micro_step() && !p.all_reduces_grads() && z.groups &&
      z.groups->quantizes_gradients()) {
    if (!p.config().backend_is_host || z.working_type() != DType::F32)
      throw std::invalid_argument("zero_quantized_gradients: quantized reductions run on the cpu backend's fp32 host "
                                  "buffers only, and this backend (" + z.backend.name() + ") keeps " +
                                  dtype_name(z.working_type()) + " gradients in its own memory; run with --backend cpu, "
                                  "or remove zero_quantized_gradients");
    qgz_ = QuantizedReduce(z.ledger, z.groups->node(), *z.groups->cross(), size_t(o.quantized_block));
    const auto ranges = exact_tensor_ranges(p.map());
    for (const Bucket& b : stream_.buckets()) qgz_split_.push_back(split_bucket(b, ranges));
  }
}

GradReducer::~GradReducer() {
  wait_or_abort(z_, "a gradient collective", [&] {
    for (; !in_flight_.empty(); in_flight_.pop_front()) in_flight_.front().handle->wait();
    for (ReplicaCall& r : replica_calls_) r.handle->wait();
  });
}

ReducedGrads GradReducer::reduced() const {
  ReducedGrads r;
  for (int u = 0; u < z_.part.units(); ++u) r.unit.push_back(z_.element_at(grads_[size_t(u)], z_.part.unit(u).state_in_grad));
  return r;
}

QuantizedReduce::WireBytes GradReducer::quantized_wire_bytes() const {
  QuantizedReduce::WireBytes w;
  if (!qgz_.on()) return w;
  const int n = z_.groups->node() ? z_.groups->node()->world_size() : 1, k = z_.groups->cross()->world_size();
  for (const BucketSplit& split : qgz_split_) {
    std::vector<size_t> owned(size_t(n) * size_t(k), 0);
    for (const BucketPiece& piece : split.outside.pieces)
      for (const OwnedPart& part : split_by_owner(piece, z_.part.shard(piece.unit).shard)) owned[size_t(part.owner)] += size_t(part.n);
    const QuantizedReduce::WireBytes b = QuantizedReduce::wire_bytes(*std::max_element(owned.begin(), owned.end()), qgz_.block(), n, k);
    w.intra_levels += b.intra_levels;
    w.intra_scales += b.intra_scales;
    w.inter_levels += b.inter_levels;
    w.inter_scales += b.inter_scales;
  }
  return w;
}

uint64_t GradReducer::exact_elements_per_micro_step() const {
  uint64_t n = 0;
  for (const BucketSplit& split : qgz_split_)
    for (const BucketPiece& piece : split.inside.pieces) n += uint64_t(piece.n);
  return n;
}

void GradReducer::start_step() {
  // A step that ended early (an exception before finish()) may leave replica calls writing into
  // the gradients: they complete before the gradients are zeroed.
  for (ReplicaCall& r : replica_calls_) r.handle->wait();
  replica_calls_.clear();
  for (int u = 0; u < z_.part.units(); ++u)
    z_.backend.zero(grads_[size_t(u)], size_t(z_.part.unit(u).grad_len) * z_.element_bytes());
}

void GradReducer::start_micro_step(bool last) {
  // The previous micro-step's last bucket may still be in flight (it overlapped this micro-step's
  // forward); its buffers must be back before backward asks for them again.
  drain(0);
  boundary_ = last;
  reducing_now_ = z_.part.reduces_each_micro_step() || (last && all_reduce_);
  stream_.rewind();
  pending_ = buckets_of_unit_;
}

void GradReducer::set_all_reduce(bool on) {
  if (!on && !z_.part.all_reduces_grads())
    throw std::logic_error("GradReducer::set_all_reduce: only stage 0's all-reduce can be turned off");
  all_reduce_ = on;
}

void* GradReducer::grad_buffer(int u) {
  void*& f = full_[size_t(u)];
  if (!f) f = pool_.acquire(z_.part.shard(u).padded, true);
  return f;
}

void GradReducer::unit_done(int u) {
  const Partition& p = z_.part;
  const int64_t P = p.shard(u).padded;
  void* full = grad_buffer(u);
  z_.emulate(full, P, z_.train_precision);  // backward writes gradients in the working type
  if (!p.reduces_each_micro_step()) {
    // Stages 0–1: micro-steps add up in the full gradient, reduced once at the boundary.
    z_.backend.accumulate(grads_[size_t(u)], full, size_t(P));
    z_.emulate(grads_[size_t(u)], P, z_.accum_precision);
    pool_.release(P, full);
    full_[size_t(u)] = nullptr;
  } else {
    z_.emulate(full, P, z_.comm_precision);  // sent in the communication type
  }
  if (!reducing_now_) return;
  stream_.issue_ready(position_of(u, p.units()), [&](size_t k) { issue(k); });
}

std::string GradReducer::bucket_name(size_t k) const {
  // "reduce_scatter bucket 3: block1+block0" — the units it holds pieces of, in backward order.
  std::string units;
  for (const BucketPiece& piece : stream_.buckets()[k].pieces) units += (units.empty() ? "" : "+") + z_.part.map().unit(piece.unit).name;
  return std::string(z_.part.all_reduces_grads() ? "all_reduce" : "reduce_scatter") + " bucket " + std::to_string(k) +
         ": " + units;
}

void GradReducer::issue(size_t k) {
  const Partition& p = z_.part;
  const bool each = p.reduces_each_micro_step();
  const Bucket& bucket = stream_.buckets()[k];
  if (!each)  // stages 0–1: the accumulated gradient is sent in the communication type
    for (const BucketPiece& piece : bucket.pieces) z_.emulate(z_.element_at(grads_[size_t(piece.unit)], piece.begin), piece.n, z_.comm_precision);
  auto buffer = [&](const BucketPiece& piece) {
    void* buf = each ? full_[size_t(piece.unit)] : grads_[size_t(piece.unit)];
    if (!buf) throw std::logic_error("GradReducer: bucket " + std::to_string(k) + " issued before unit " +
                                     std::to_string(piece.unit) + "'s gradient exists");
    return buf;
  };
  CommHandlePtr h;
  std::shared_ptr<TwoHopHandle> two_hop;
  if (qgz_.on()) {  // qgZ: the 1-D tensors exactly, the rest through the two quantized hops
    const BucketSplit& split = qgz_split_[k];
    const std::vector<Segment> exact = bucket_segments(z_, split.inside, true, buffer);
    CommHandlePtr e;
    if (!exact.empty()) e = z_.comm.reduce_scatter_segments_async(exact, z_.working_type(), ReduceOp::Sum);
    two_hop = qgz_.reduce_async(bucket_segments(z_, split.outside, true, buffer));
    h = std::make_shared<BothHandle>(std::move(e), two_hop);
    for (const Segment& s : exact) exact_elements_ += s.count;
  } else {
    const std::vector<Segment> segs = bucket_segments(z_, bucket, !p.all_reduces_grads(), buffer);
    h = p.all_reduces_grads() ? z_.comm.all_reduce_segments_async(segs, z_.working_type(), ReduceOp::Sum)
                              : z_.comm.reduce_scatter_segments_async(segs, z_.working_type(), ReduceOp::Sum);
  }
  in_flight_.push_back({k, std::move(h), Clock::now(), std::move(two_hop)});
  // qgZ: the buckets issued before this one start their second hop now, at the same point of
  // every rank's walk (so every communicator sees its calls in one order).
  for (size_t i = 0; i + 1 < in_flight_.size(); ++i)
    if (in_flight_[i].two_hop) in_flight_[i].two_hop->advance();
  drain(reduce_calls_kept_in_flight(overlap_, each, qgz_.on()));
}

void GradReducer::drain(size_t keep) {
  while (in_flight_.size() > keep) complete_front();
}

void GradReducer::complete_front() {
  InFlight f = std::move(in_flight_.front());
  in_flight_.pop_front();
  const auto t0 = Clock::now();
  f.handle->wait();
  z_.times.reduce_wait_s += seconds_since(t0);
  const std::string name = bucket_name(f.bucket);
  z_.traced("wait " + name, TraceTrack::Wait, t0);
  z_.traced(name, TraceTrack::Comm, f.issued);
  const Partition& p = z_.part;
  const int me = p.rank();
  for (const BucketPiece& piece : stream_.buckets()[f.bucket].pieces) {
    const int u = piece.unit;
    const UnitShard& sh = p.shard(u);
    if (p.all_reduces_grads()) {
      z_.emulate(z_.element_at(grads_[size_t(u)], piece.begin), piece.n, z_.comm_precision);  // the sum as sent
      continue;
    }
    for (const OwnedPart& part : split_by_owner(piece, sh.shard)) {
      if (part.owner != me) continue;
      if (!p.reduces_each_micro_step()) {  // stage 1: the sum landed in place in the full gradient
        z_.emulate(z_.element_at(grads_[size_t(u)], part.begin), part.n, z_.comm_precision);
        continue;
      }
      // Stages 2–3: this rank's part of the micro-step's sum joins its accumulated shard.
      void* sum = z_.element_at(full_[size_t(u)], part.begin);
      void* acc = z_.element_at(grads_[size_t(u)], part.begin - sh.rank_begin);
      z_.emulate(sum, part.n, z_.comm_precision);
      z_.backend.accumulate(acc, sum, size_t(part.n));
      z_.emulate(acc, part.n, z_.accum_precision);
    }
    if (p.reduces_each_micro_step() && --pending_[size_t(u)] == 0) {
      pool_.release(sh.padded, full_[size_t(u)]);
      full_[size_t(u)] = nullptr;
    }
  }
  if (boundary_) all_reduce_replicas(f.bucket);
}

void GradReducer::finish() {
  if (reducing_now_ && stream_.unissued() > 0)
    throw std::logic_error("GradReducer::finish: " + std::to_string(stream_.unissued()) +
                           " bucket(s) were never issued (a unit's backward did not report done)");
  drain(0);
  for (ReplicaCall& r : replica_calls_) {
    const auto t0 = Clock::now();
    r.handle->wait();
    z_.times.reduce_wait_s += seconds_since(t0);
    z_.traced("wait all_reduce across replicas", TraceTrack::Wait, t0);
    z_.traced("all_reduce across replicas", TraceTrack::Comm, r.issued);
    for (const Segment& s : r.segments) z_.emulate(s.data, int64_t(s.count), z_.comm_precision);
  }
  replica_calls_.clear();
}

void GradReducer::all_reduce_replicas(size_t k) {
  Communicator* replicas = z_.replica_comm();
  if (!replicas) return;
  // MiCS: bucket k's parts this rank owns hold the shard group's sums of every micro-step, final
  // now; they are added over the replica groups (whose members own the same parts), in the
  // communication type as every reduction is sent, while backward goes on.
  const Partition& p = z_.part;
  std::vector<Segment> segs;
  for (const BucketPiece& piece : stream_.buckets()[k].pieces) {
    const UnitShard& sh = p.shard(piece.unit);
    for (const OwnedPart& part : split_by_owner(piece, sh.shard)) {
      if (part.owner != p.rank()) continue;
      void* acc = z_.element_at(grads_[size_t(piece.unit)], part.begin - sh.rank_begin);
      z_.emulate(acc, part.n, z_.comm_precision);
      segs.push_back({acc, size_t(part.n), 0});
    }
  }
  if (segs.empty()) return;  // every replica owns the same parts: all of them skip this bucket
  ReplicaCall r{replicas->all_reduce_segments_async(segs, z_.working_type(), ReduceOp::Sum), std::move(segs), Clock::now()};
  if (!overlap_) {  // without overlap_comm every collective is waited where it is issued
    const auto t0 = Clock::now();
    r.handle->wait();
    z_.times.reduce_wait_s += seconds_since(t0);
  }
  replica_calls_.push_back(std::move(r));
}

}  // namespace zt
