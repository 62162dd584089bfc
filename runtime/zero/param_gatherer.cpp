// ParamGatherer: stage 3's fetch / prefetch / release and stages 1–2's bucketed post-update gather.
#include "runtime/zero/param_gatherer.h"

#include <algorithm>
#include <stdexcept>

namespace zt {

ParamGatherer::ParamGatherer(ZeroContext& z, UnitBufferPool& pool, ParamStore& store, const GatherOptions& o,
                             bool tied_head)
    : z_(z), pool_(pool), store_(store), o_(o), U_(z.part.units()) {
  gathered_.resize(size_t(U_));
  std::vector<int64_t> padded, numel;
  for (int u = 0; u < U_; ++u) {
    padded.push_back(z.part.shard(u).padded);
    numel.push_back(z.part.shard(u).numel);
  }
  schedule_ = GatherSchedule(padded, numel, o, tied_head);
  if (z.part.gathers_params_for_compute() && o.hpz_partition_size > 1 && z.secondary_comm()) {
    hpz_ = o.hpz_partition_size;
    for (int u = 0; u < U_; ++u)
      secondary_.push_back(z.ledger.alloc(MemCategory::Params, size_t(padded[size_t(u)] / hpz_) * z.element_bytes()));
    secondary_valid_.assign(size_t(U_), false);
  }
  if (z.part.gathers_params_for_compute() && o.mics_hierarchical && z.groups && z.groups->mics() && z.groups->cross())
    hierarchical_ = HierarchicalGather(z.groups->cross(), z.groups->node());
  if (z.part.gathers_params_for_compute() && o.quantized_weights && z.comm.world_size() > 1) {  // 1 rank: nothing sent
    if (z.working_type() != DType::F32 || hierarchical_.on())
      throw std::invalid_argument("zero_quantized_weights: quantized gathers run on the host backend's fp32 buffers "
                                  "and not with MiCS's two-level gather");
    quantized_ = QuantizedGather(&z.ledger);
  }
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
  for (void* p : secondary_) z_.ledger.free(p);
}

// --- stage 3 ------------------------------------------------------------------------------------

void ParamGatherer::gather(int u, bool wait) {
  Gathered& g = gathered_[size_t(u)];
  const int64_t P = z_.part.shard(u).padded;
  if (!g.full) {
    g.full = pool_.acquire(P, false);
    live_elements_ += P;
    g.from_secondary = hpz_ > 1 && secondary_valid_[size_t(u)];
    // qwZ's dequantized values are rounded to the training precision a 16-bit backend would store.
    const DType round_to = z_.emulates() ? z_.train_precision : DType::F32;
    const bool quantize = quantized_.on() && o_.quantizes_gather_of(z_.part.shard(u).numel);
    if (g.from_secondary) {
      Communicator& group = *z_.secondary_comm();
      g.pending = quantize
                      ? quantized_.gather_async(group, static_cast<const float*>(secondary_[size_t(u)]),
                                                static_cast<float*>(g.full), size_t(P), round_to)
                      : group.all_gather_async(secondary_[size_t(u)], g.full, size_t(P), z_.working_type());
    } else {
      const void* shard = store_.gather_source(u);
      if (quantize) {
        g.pending = quantized_.gather_async(z_.comm, static_cast<const float*>(shard), static_cast<float*>(g.full),
                                            size_t(P), round_to);
      } else if (hierarchical_.on()) {  // MiCS's two levels: the shard goes to its place, then in place
        z_.backend.copy(z_.element_at(g.full, z_.part.shard(u).rank_begin), shard, size_t(z_.part.shard(u).shard) * z_.element_bytes());
        g.pending = hierarchical_.gather_async(g.full, size_t(P), z_.working_type(), z_.element_bytes());
      } else {
        g.pending = z_.comm.all_gather_async(shard, g.full, size_t(P), z_.working_type());
      }
    }
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
  std::vector<bool> gathered;
  for (const Gathered& g : gathered_) gathered.push_back(g.full != nullptr);
  for (int ahead : schedule_.prefetch_after(pos, live_elements_, gathered)) gather(ahead, false);
}

const void* ParamGatherer::params(int u) {
  if (!z_.part.gathers_params_for_compute()) return store_.resident(u);
  gather(u, true);
  return gathered_[size_t(u)].full;
}

void ParamGatherer::release(int u, bool keep_secondary) {
  Gathered& g = gathered_[size_t(u)];
  if (!g.full) return;
  if (g.pending) g.pending->wait();
  g.pending.reset();
  store_.release_gather_source(u);  // idempotent: nothing to give back after a secondary gather
  const int64_t P = z_.part.shard(u).padded;
  if (hpz_ > 1 && keep_secondary && !secondary_valid_[size_t(u)]) {
    const int64_t slice = P / hpz_;  // this rank's place in its group: the group communicator's rank
    z_.backend.copy(secondary_[size_t(u)], z_.element_at(g.full, slice * z_.secondary_comm()->rank()),
                    size_t(slice) * z_.element_bytes());
    secondary_valid_[size_t(u)] = true;
  }
  pool_.release(P, g.full);
  live_elements_ -= P;
  g.full = nullptr;
}

void ParamGatherer::maybe_release(int u, int pos) {
  if (gathered_[size_t(u)].full && !schedule_.keeps_after(u, pos, live_elements_)) release(u);
}

void ParamGatherer::after_compute(int u, int pos) {
  if (!z_.part.gathers_params_for_compute()) return;
  maybe_release(u, pos);
  if (schedule_.reads_embedding(u)) maybe_release(0, pos);
}

void ParamGatherer::release_all() {
  for (int u = 0; u < U_; ++u) release(u, false);
  secondary_valid_.assign(secondary_valid_.size(), false);
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
