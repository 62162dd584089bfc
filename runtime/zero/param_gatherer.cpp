// ParamGatherer: stage 3's fetch / prefetch / release and stages 1–2's bucketed post-update gather.
#include "runtime/zero/param_gatherer.h"

#include <algorithm>

namespace zt {

ParamGatherer::ParamGatherer(ZeroContext& z, UnitBufferPool& pool, ParamStore& store, const GatherOptions& o)
    : z_(z), pool_(pool), store_(store), o_(o), U_(z.part.units()) {
  gathered_.resize(size_t(U_));
  if (z.part.gathers_params_after_update()) {
    std::vector<int> order;
    std::vector<int64_t> len;
    for (int u = 0; u < U_; ++u) {
      order.push_back(u);
      len.push_back(z.part.shard(u).padded);
    }
    sync_ = BucketStream(order, len, o.allgather_bucket_size);
  }
}

ParamGatherer::~ParamGatherer() {
  wait_or_abort(z_, "a parameter gather", [&] {
    for (auto& h : syncing_) h->wait();
    for (auto& g : gathered_)
      if (g.pending) g.pending->wait();
  });
}

// --- stage 3 ------------------------------------------------------------------------------------

void ParamGatherer::gather(int u, bool wait) {
  Gathered& g = gathered_[size_t(u)];
  const int64_t P = z_.part.shard(u).padded;
  if (!g.full) {
    g.full = pool_.acquire(P, false);
    live_elements_ += P;
    const void* shard = store_.gather_source(u);
    g.pending = z_.comm.all_gather_async(shard, g.full, size_t(P), z_.working_type());
    g.issued = Clock::now();
  }
  if (wait && g.pending) {
    const auto t0 = Clock::now();
    g.pending->wait();
    z_.times.gather_wait_s += seconds_since(t0);
    const std::string name = "all_gather " + z_.part.map().unit(u).name;
    z_.traced("wait " + name, TraceTrack::Wait, t0);
    z_.traced(name, TraceTrack::Comm, g.issued);
    g.pending.reset();
    store_.release_gather_source(u);
  }
}

void ParamGatherer::before_compute(int u, int pos) {
  if (!z_.part.gathers_params_for_compute()) return;
  gather(u, false);
  if (!o_.overlap) return;
  int64_t budget = o_.prefetch_bucket_size;
  for (int q = pos + 1; q < 2 * U_; ++q) {
    const int v = unit_at(q);
    if (gathered_[size_t(v)].full) continue;
    const int64_t P = z_.part.shard(v).padded;
    if (P > budget || live_elements_ + P > o_.max_live_parameters) break;
    gather(v, false);
    budget -= P;
  }
}

const void* ParamGatherer::params(int u) {
  if (!z_.part.gathers_params_for_compute()) return store_.resident(u);
  gather(u, true);
  return gathered_[size_t(u)].full;
}

bool ParamGatherer::uses_unit(int pos, int u) const {
  const int v = unit_at(pos);
  return v == u || (o_.tied_head && u == 0 && v == U_ - 1);
}

void ParamGatherer::release(int u) {
  Gathered& g = gathered_[size_t(u)];
  if (!g.full) return;
  if (g.pending) g.pending->wait();
  g.pending.reset();
  store_.release_gather_source(u);
  const int64_t P = z_.part.shard(u).padded;
  pool_.release(P, g.full);
  live_elements_ -= P;
  g.full = nullptr;
}

void ParamGatherer::maybe_release(int u, int pos) {
  Gathered& g = gathered_[size_t(u)];
  if (!g.full) return;
  if (z_.part.shard(u).numel <= o_.persistence_threshold) return;  // kept until the update makes it stale
  int next = -1;
  for (int q = pos + 1; q < 2 * U_ && next < 0; ++q)
    if (uses_unit(q, u)) next = q;
  if (next >= 0) {
    int64_t distance = 0;  // parameters computed on before the next use
    for (int q = pos + 1; q < next; ++q) distance += z_.part.shard(unit_at(q)).numel;
    if (distance < o_.max_reuse_distance && live_elements_ <= o_.max_live_parameters) return;
  }
  release(u);
}

void ParamGatherer::after_compute(int u, int pos) {
  if (!z_.part.gathers_params_for_compute()) return;
  maybe_release(u, pos);
  if (o_.tied_head && u == U_ - 1) maybe_release(0, pos);
}

void ParamGatherer::release_all() {
  for (int u = 0; u < U_; ++u) release(u);
}

// --- stages 1–2 -----------------------------------------------------------------------------------

void ParamGatherer::start_param_sync(int u) {
  if (!z_.part.gathers_params_after_update()) return;
  sync_.issue_ready(u, [&](size_t k) {
    const std::vector<Segment> segs = bucket_segments(z_, sync_.buckets()[k], true, [&](const BucketPiece& piece) {
      store_.wait_written(piece.unit);  // a staged unit's copy-in must land before its shard is sent
      return store_.resident(piece.unit);
    });
    syncing_.push_back(z_.comm.all_gather_segments_async(segs, z_.working_type()));
    if (!o_.overlap) {
      syncing_.back()->wait();
      syncing_.pop_back();
    }
  });
}

void ParamGatherer::finish_param_sync() {
  if (!z_.part.gathers_params_after_update()) return;
  start_param_sync(U_ - 1);
  const auto t0 = Clock::now();
  for (auto& h : syncing_) h->wait();
  syncing_.clear();
  z_.times.gather_wait_s += seconds_since(t0);
  z_.traced("wait all_gather (updated params)", TraceTrack::Wait, t0);
  sync_.rewind();
}

}  // namespace zt
