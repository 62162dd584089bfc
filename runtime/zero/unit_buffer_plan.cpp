// unit_buffer_peak_elements: one training step's schedule walked with a counting pool.
#include "runtime/zero/unit_buffer_plan.h"

#include <deque>
#include <map>

#include "runtime/zero/buckets.h"
#include "runtime/zero/gather_schedule.h"
#include "base/stage_traits.h"

namespace zt {

namespace {

// The pool's arithmetic: a buffer of a size comes back for the next request of that size, so the
// pool ends up holding, for each size, the most buffers of it that were ever out at once.
class CountingPool {
 public:
  void acquire(int64_t n) {
    const int out = ++out_[n];
    if (out > most_[n]) most_[n] = out;
  }
  void release(int64_t n) { --out_[n]; }
  int64_t held_elements() const {
    int64_t total = 0;
    for (const auto& [n, count] : most_) total += n * count;
    return total;
  }

 private:
  std::map<int64_t, int> out_, most_;
};

class StepWalk {
 public:
  StepWalk(const UnitBufferWalk& w, CountingPool& pool)
      : w_(w),
        pool_(pool),
        traits_(stage_traits(w.stage)),
        schedule_(w.padded, w.numel, w.gather, w.tied_head),
        U_(int(w.padded.size())),
        gathered_(size_t(U_), false),
        secondary_(size_t(U_), false),
        grad_(size_t(U_), false) {
    std::vector<int> order;
    for (int u = U_ - 1; u >= 0; --u) order.push_back(u);
    stream_ = BucketStream(order, w.padded, w.reduce.bucket_elems, w.reduce.quantized_gradients ? w.ranks : 0);
    buckets_of_unit_.assign(size_t(U_), 0);
    for (const Bucket& b : stream_.buckets())
      for (const BucketPiece& piece : b.pieces) ++buckets_of_unit_[size_t(piece.unit)];
    volumes_.primary_calls.assign(size_t(U_), 0);
    volumes_.secondary_calls.assign(size_t(U_), 0);
  }

  UnitGatherVolumes gathered() const { return volumes_; }

  void run() {
    for (int micro = 0; micro < w_.micro_steps; ++micro) {
      forward();
      backward(micro == w_.micro_steps - 1);
    }
    drain(0);  // GradReducer::finish
    for (int u = 0; u < U_; ++u) release_gathered(u, false);  // the update makes every gathered copy stale
    secondary_.assign(size_t(U_), false);                     // and hpZ's secondary copy
  }

 private:
  // Partition::gathers_params_for_compute and reduces_each_micro_step read the same traits.
  bool gathers() const { return traits_.shards_params; }
  bool each() const { return traits_.shards_grads; }
  // qgZ keeps two buckets in flight; the walk does not know the nodes, so it plans for qgZ whenever
  // it is asked for at more than one rank (on one node that plans one bucket more than runs).
  bool qgz() const { return w_.reduce.quantized_gradients && w_.ranks > 1; }

  void forward() {
    for (int u = 0; u < U_; ++u) {
      before_compute(u, u);
      params(u);
      if (schedule_.reads_embedding(u)) params(0);
      after_compute(u, u);
    }
  }

  void backward(bool last) {
    drain(0);  // GradReducer::start_micro_step
    reducing_now_ = each() || last;
    stream_.rewind();
    pending_ = buckets_of_unit_;
    for (int u = U_ - 1; u >= 0; --u) {
      const int pos = 2 * U_ - 1 - u;
      before_compute(u, pos);
      params(u);
      if (schedule_.reads_embedding(u)) params(0);
      grad_buffer(u);
      if (schedule_.reads_embedding(u)) grad_buffer(0);
      unit_done(u);
      after_compute(u, pos);
    }
  }

  // --- the ParamGatherer's side (stage 3): its GatherSchedule, a counting pool for memory ---
  void gather(int u) {
    if (gathered_[size_t(u)]) return;
    gathered_[size_t(u)] = true;
    const bool secondary = secondary_[size_t(u)];
    (secondary ? volumes_.secondary : volumes_.primary) += w_.padded[size_t(u)];
    (secondary ? volumes_.secondary_calls : volumes_.primary_calls)[size_t(u)] += 1;
    pool_.acquire(w_.padded[size_t(u)]);
    live_ += w_.padded[size_t(u)];
  }
  // `keep_secondary`: hpZ copies the unit's slice before it goes (ParamGatherer::release).
  void release_gathered(int u, bool keep_secondary = true) {
    if (!gathered_[size_t(u)]) return;
    gathered_[size_t(u)] = false;
    if (keep_secondary && w_.gather.hpz_partition_size > 1) secondary_[size_t(u)] = true;
    pool_.release(w_.padded[size_t(u)]);
    live_ -= w_.padded[size_t(u)];
  }
  void before_compute(int u, int pos) {
    if (!gathers()) return;
    gather(u);
    for (int ahead : schedule_.prefetch_after(pos, live_, gathered_)) gather(ahead);
  }
  void params(int u) {
    if (gathers()) gather(u);
  }
  void maybe_release(int u, int pos) {
    if (gathered_[size_t(u)] && !schedule_.keeps_after(u, pos, live_)) release_gathered(u);
  }
  void after_compute(int u, int pos) {
    if (!gathers()) return;
    maybe_release(u, pos);
    if (schedule_.reads_embedding(u)) maybe_release(0, pos);
  }

  // --- the GradReducer's side: its BucketStream and in-flight rule ---
  void grad_buffer(int u) {
    if (grad_[size_t(u)]) return;
    grad_[size_t(u)] = true;
    pool_.acquire(w_.padded[size_t(u)]);
  }
  void release_grad(int u) {
    grad_[size_t(u)] = false;
    pool_.release(w_.padded[size_t(u)]);
  }
  void unit_done(int u) {
    grad_buffer(u);
    if (!each()) release_grad(u);  // added into the full gradient at once
    if (!reducing_now_) return;
    stream_.issue_ready(U_ - 1 - u, [&](size_t k) {
      in_flight_.push_back(k);
      drain(reduce_calls_kept_in_flight(w_.reduce.overlap, each(), qgz()));
    });
  }
  void drain(size_t keep) {
    while (in_flight_.size() > keep) {
      const size_t k = in_flight_.front();
      in_flight_.pop_front();
      if (!each()) continue;
      for (const BucketPiece& piece : stream_.buckets()[k].pieces)
        if (--pending_[size_t(piece.unit)] == 0) release_grad(piece.unit);
    }
  }

  const UnitBufferWalk& w_;
  CountingPool& pool_;
  StageTraits traits_;
  GatherSchedule schedule_;
  int U_;
  std::vector<bool> gathered_, secondary_, grad_;
  int64_t live_ = 0;
  UnitGatherVolumes volumes_;
  BucketStream stream_;
  std::vector<int> buckets_of_unit_, pending_;
  std::deque<size_t> in_flight_;
  bool reducing_now_ = false;
};

}  // namespace

int64_t unit_buffer_peak_elements(const UnitBufferWalk& walk) {
  CountingPool pool;
  StepWalk(walk, pool).run();
  return pool.held_elements();
}

UnitGatherVolumes unit_gather_elements_per_step(const UnitBufferWalk& walk) {
  CountingPool pool;
  StepWalk w(walk, pool);
  w.run();
  return w.gathered();
}

}  // namespace zt
