// unit_buffer_peak_elements: one training step's schedule walked with a counting pool.
#include "runtime/zero/unit_buffer_plan.h"

#include <deque>
#include <map>

#include "runtime/zero/buckets.h"

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
      : w_(w), pool_(pool), U_(int(w.padded.size())), gathered_(size_t(U_), false), grad_(size_t(U_), false) {
    std::vector<int> order;
    for (int u = U_ - 1; u >= 0; --u) order.push_back(u);
    stream_ = BucketStream(order, w.padded, w.reduce_bucket_elems);
    buckets_of_unit_.assign(size_t(U_), 0);
    for (const Bucket& b : stream_.buckets())
      for (const BucketPiece& piece : b.pieces) ++buckets_of_unit_[size_t(piece.unit)];
  }

  void run() {
    for (int m = 0; m < w_.micro_steps; ++m) {
      forward();
      backward(m == w_.micro_steps - 1);
    }
    drain(0);  // GradReducer::finish
    for (int u = 0; u < U_; ++u) release_gathered(u);  // the update makes every gathered copy stale
  }

 private:
  bool stage3() const { return w_.stage >= 3; }
  bool each() const { return w_.stage >= 2; }  // reduces every micro-step, buffers kept until reduced
  bool reads_embedding(int u) const { return w_.gather.tied_head && u == U_ - 1; }
  int unit_at(int pos) const { return pos < U_ ? pos : 2 * U_ - 1 - pos; }

  void forward() {
    for (int u = 0; u < U_; ++u) {
      before_compute(u, u);
      params(u);
      if (reads_embedding(u)) params(0);
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
      if (reads_embedding(u)) params(0);
      grad_buffer(u);
      if (reads_embedding(u)) grad_buffer(0);
      unit_done(u);
      after_compute(u, pos);
    }
  }

  // --- ParamGatherer's rules (stage 3) ---
  void gather(int u) {
    if (gathered_[size_t(u)]) return;
    gathered_[size_t(u)] = true;
    pool_.acquire(w_.padded[size_t(u)]);
    live_ += w_.padded[size_t(u)];
  }
  void release_gathered(int u) {
    if (!gathered_[size_t(u)]) return;
    gathered_[size_t(u)] = false;
    pool_.release(w_.padded[size_t(u)]);
    live_ -= w_.padded[size_t(u)];
  }
  void before_compute(int u, int pos) {
    if (!stage3()) return;
    gather(u);
    if (!w_.gather.overlap) return;
    int64_t budget = w_.gather.prefetch_bucket_size;
    for (int q = pos + 1; q < 2 * U_; ++q) {
      const int v = unit_at(q);
      if (gathered_[size_t(v)]) continue;
      const int64_t P = w_.padded[size_t(v)];
      if (P > budget || live_ + P > w_.gather.max_live_parameters) break;
      gather(v);
      budget -= P;
    }
  }
  void params(int u) {
    if (stage3()) gather(u);
  }
  bool uses_unit(int pos, int u) const {
    const int v = unit_at(pos);
    return v == u || (w_.gather.tied_head && u == 0 && v == U_ - 1);
  }
  void maybe_release(int u, int pos) {
    if (!gathered_[size_t(u)] || w_.numel[size_t(u)] <= w_.gather.persistence_threshold) return;
    int next = -1;
    for (int q = pos + 1; q < 2 * U_ && next < 0; ++q)
      if (uses_unit(q, u)) next = q;
    if (next >= 0) {
      int64_t distance = 0;
      for (int q = pos + 1; q < next; ++q) distance += w_.numel[size_t(unit_at(q))];
      if (distance < w_.gather.max_reuse_distance && live_ <= w_.gather.max_live_parameters) return;
    }
    release_gathered(u);
  }
  void after_compute(int u, int pos) {
    if (!stage3()) return;
    maybe_release(u, pos);
    if (reads_embedding(u)) maybe_release(0, pos);
  }

  // --- GradReducer's rules ---
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
      if (!w_.overlap) drain(0);
      else if (each()) drain(1);
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
  int U_;
  std::vector<bool> gathered_, grad_;
  int64_t live_ = 0;
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

}  // namespace zt
