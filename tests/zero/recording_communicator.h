// RecordingCommunicator: a one-process Communicator that plays rank `rank` of a world of `world`
// ranks, records every call (op, entry point, element counts, segments, dtype, reduction) with the
// test's clock at issue and at completion, and completes each call only when its handle is waited
// (or a later one is: handles complete in issue order). Completing performs the collective as if
// every rank held this rank's values: a reduction's sum is world × the value (an all-reduce's in
// every segment, a reduce-scatter's in the segments this rank owns; the others keep their own
// values), an all-gather leaves the values as they are. Deferring the data to completion means a
// caller that reads a result before waiting reads the unreduced values, and the test sees it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "collectives/communicator.h"

namespace zt::test {

// When, in the test's driver: which step and micro-step, and in which verb.
struct TestClock {
  int step = -1, micro = -1;
  std::string verb;  // "start_step", "start_micro_step", "unit_done", "finish", ...
  int unit = -1;     // unit_done's unit
  bool operator==(const TestClock& o) const {
    return step == o.step && micro == o.micro && verb == o.verb && unit == o.unit;
  }
  std::string str() const {
    return "step " + std::to_string(step) + " micro " + std::to_string(micro) + " " + verb +
           (unit >= 0 ? "(" + std::to_string(unit) + ")" : "");
  }
};

inline void PrintTo(const TestClock& c, std::ostream* os) { *os << c.str(); }

struct RecordedCall {
  CommOp op = CommOp::Barrier;
  std::string entry;  // the virtual method called, e.g. "reduce_scatter_segments_async"
  bool segmented = false;
  DType dtype = DType::F32;
  ReduceOp reduce = ReduceOp::Sum;
  size_t count = 0;               // elements: Σ segment counts, or the plain call's count
  std::vector<Segment> segments;  // as passed (copied)
  const void* send = nullptr;     // plain calls
  void* recv = nullptr;
  TestClock issued, completed;
  bool done = false;
  int waits = 0;  // wait() calls on its handle
};

class RecordingCommunicator final : public Communicator {
 public:
  RecordingCommunicator(int rank, int world) : rank_(rank), world_(world) {}

  TestClock now;  // set by the test before each verb
  std::vector<RecordedCall> calls;
  std::vector<std::string> errors;  // contract violations seen (waiting out of order is not one)

  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  std::string name() const override { return "recording"; }

  CommHandlePtr all_reduce_async(const void* send, void* recv, size_t count, DType t, ReduceOp op) override {
    return plain(CommOp::AllReduce, "all_reduce_async", send, recv, count, t, op);
  }
  CommHandlePtr reduce_scatter_async(const void* send, void* recv, size_t count, DType t, ReduceOp op) override {
    return plain(CommOp::ReduceScatter, "reduce_scatter_async", send, recv, count, t, op);
  }
  CommHandlePtr all_gather_async(const void* send, void* recv, size_t count, DType t) override {
    return plain(CommOp::AllGather, "all_gather_async", send, recv, count, t, ReduceOp::Sum);
  }
  CommHandlePtr broadcast_async(void* buf, size_t count, DType t, int root) override {
    return plain(CommOp::Broadcast, "broadcast_async", buf, buf, count, t, ReduceOp::Sum);
  }
  CommHandlePtr barrier_async() override {
    return plain(CommOp::Barrier, "barrier_async", nullptr, nullptr, 0, DType::F32, ReduceOp::Sum);
  }
  CommHandlePtr reduce_scatter_segments_async(const std::vector<Segment>& s, DType t, ReduceOp op) override {
    return segmented(CommOp::ReduceScatter, "reduce_scatter_segments_async", s, t, op);
  }
  CommHandlePtr all_reduce_segments_async(const std::vector<Segment>& s, DType t, ReduceOp op) override {
    return segmented(CommOp::AllReduce, "all_reduce_segments_async", s, t, op);
  }
  CommHandlePtr all_gather_segments_async(const std::vector<Segment>& s, DType t) override {
    return segmented(CommOp::AllGather, "all_gather_segments_async", s, t, ReduceOp::Sum);
  }

  CommStats stats() const override {
    CommStats st;
    for (const RecordedCall& c : calls) {
      CommOpStats& o = st.op[int(c.op)];
      ++o.calls;
      o.bytes += uint64_t(c.count) * dtype_size(c.dtype);
    }
    return st;
  }
  void reset_stats() override { calls.clear(); }

  // Completes every call up to and including `i`, in issue order.
  void complete_through(size_t i) {
    for (size_t k = 0; k <= i && k < calls.size(); ++k)
      if (!calls[k].done) complete(k);
  }
  size_t in_flight() const {
    size_t n = 0;
    for (const RecordedCall& c : calls) n += c.done ? 0 : 1;
    return n;
  }

 private:
  class Handle final : public CommHandle {
   public:
    Handle(RecordingCommunicator* c, size_t i) : c_(c), i_(i) {}
    void wait() override {
      ++c_->calls[i_].waits;
      c_->complete_through(i_);
    }
    bool done() override { return c_->calls[i_].done; }

   private:
    RecordingCommunicator* c_;
    size_t i_;
  };

  CommHandlePtr plain(CommOp op, const char* entry, const void* send, void* recv, size_t count, DType t, ReduceOp r) {
    RecordedCall c;
    c.op = op;
    c.entry = entry;
    c.dtype = t;
    c.reduce = r;
    c.count = count;
    c.send = send;
    c.recv = recv;
    c.issued = now;
    calls.push_back(std::move(c));
    return std::make_shared<Handle>(this, calls.size() - 1);
  }

  CommHandlePtr segmented(CommOp op, const char* entry, const std::vector<Segment>& s, DType t, ReduceOp r) {
    RecordedCall c;
    c.op = op;
    c.entry = entry;
    c.segmented = true;
    c.dtype = t;
    c.reduce = r;
    c.segments = s;
    for (const Segment& g : s) {
      c.count += g.count;
      if (!g.data && g.count) errors.push_back(std::string(entry) + ": a segment without data");
      if (g.owner < 0 || g.owner >= world_) errors.push_back(std::string(entry) + ": owner outside the world");
    }
    c.issued = now;
    calls.push_back(std::move(c));
    return std::make_shared<Handle>(this, calls.size() - 1);
  }

  // The data side, as if every rank held the same values. Only fp32 (the CPU backend's type).
  void complete(size_t k) {
    RecordedCall& c = calls[k];
    c.done = true;
    c.completed = now;
    if (c.op == CommOp::Barrier || c.op == CommOp::Broadcast || c.op == CommOp::AllGather) return;
    if (c.dtype != DType::F32) {
      errors.push_back("call " + std::to_string(k) + ": a reduction in a type this fake does not sum");
      return;
    }
    const float scale = c.reduce == ReduceOp::Sum ? float(world_) : 1.0f;
    auto scaled = [&](float* x, size_t n) {
      for (size_t i = 0; i < n; ++i) x[i] *= scale;
    };
    if (!c.segmented) {
      if (c.send != c.recv) errors.push_back("call " + std::to_string(k) + ": out of place (this fake is in place only)");
      if (c.op == CommOp::AllReduce) scaled(static_cast<float*>(c.recv), c.count);
      else scaled(static_cast<float*>(c.recv) + size_t(rank_) * c.count / size_t(world_), c.count / size_t(world_));
      return;
    }
    for (const Segment& g : c.segments)
      if (c.op == CommOp::AllReduce || g.owner == rank_) scaled(static_cast<float*>(g.data), g.count);
  }

  int rank_, world_;
};

}  // namespace zt::test
