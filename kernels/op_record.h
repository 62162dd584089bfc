// Op records: what a Backend ran while profiling was on — each op's cost (op_flops.h), its time and
// the scope it ran in. The walk that calls the model names the scope (OpScope: a unit and a pass);
// the backend records every op into it (RecordedOp, one line at the top of each op), so no one has
// to guess afterwards which unit an op belonged to. llm.c's NVTX ranges and PyTorch's
// record_function scopes are the pattern.
//
// Off (no recorder attached to the backend, Backend::attach_op_recorder), an op or a scope costs
// one null-pointer test. On, each op is bracketed by synchronize() (CPU: the copy lane drains,
// nearly free; CUDA: a device sync per op, which serialises the stream for the profiled step — the
// price of per-op times without CUDA events).
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <utility>
#include <vector>

#include "kernels/backend.h"
#include "kernels/op_flops.h"

namespace zt {

enum class OpPass { Forward, Backward };

// One recorded op (or the fused part of one): its cost, time and the scope open when it ran.
struct OpRecord {
  OpCost cost;
  double seconds = 0;      // the call's time, on its main op; 0 on a fused part
  int unit = -1;           // the open scope's unit; -1: outside every scope (the engine's own ops)
  OpPass pass = OpPass::Forward;
  int64_t scope = -1;      // which opening of a scope it ran in (index into OpRecorder::scopes())
};

// A scope as it was opened, in order.
struct OpScopeOpening {
  int unit = 0;
  OpPass pass = OpPass::Forward;
};

// The sink: records in issue order, and the scopes opened, while attached to a backend.
class OpRecorder {
 public:
  // Forgets every record and scope (the start of a profiled step). Not while a scope is open.
  void clear();
  const std::vector<OpRecord>& records() const { return records_; }
  const std::vector<OpScopeOpening>& scopes() const { return scopes_; }

  // OpScope's verbs: open returns the scope it replaces, close restores it.
  int64_t open_scope(int unit, OpPass pass);
  void close_scope(int64_t previous) { current_ = previous; }

  // RecordedOp's verbs. An op called from inside another recorded op (in_op()) is not recorded:
  // the outer one is the record. begin_op synchronises `b` and starts the clock.
  bool in_op() const { return in_op_; }
  void begin_op(Backend& b);
  void end_op(Backend& b, OpCosts costs);  // synchronises, records each part
  void abandon_op();                       // the op threw: nothing recorded, nothing synchronised

 private:
  using Clock = std::chrono::steady_clock;
  std::vector<OpRecord> records_;
  std::vector<OpScopeOpening> scopes_;
  int64_t current_ = -1;
  bool in_op_ = false;
  Clock::time_point start_;
};

// Opened by the walk around one unit's forward or backward: every op the backend runs meanwhile is
// recorded into it. Nothing happens when the backend has no recorder.
class OpScope {
 public:
  OpScope(Backend& b, int unit, OpPass pass) : rec_(b.op_recorder()) {
    if (rec_) previous_ = rec_->open_scope(unit, pass);
  }
  ~OpScope() {
    if (rec_) rec_->close_scope(previous_);
  }
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

 private:
  OpRecorder* rec_;
  int64_t previous_ = -1;
};

// The first line of each Backend op's implementation:
//   const RecordedOp rec(*this, op_cost::matmul_forward, N, IC, OC, bias != nullptr);
// With a recorder attached, `cost(args...)` (the op's line in op_flops.h) is evaluated and the op is
// timed until the end of the enclosing block; without one, nothing but the test of the pointer.
class RecordedOp {
 public:
  template <class Cost, class... Args>
  RecordedOp(Backend& b, Cost&& cost, const Args&... args) : backend_(b), rec_(b.op_recorder()) {
    if (rec_ == nullptr) [[likely]]
      return;
    if (rec_->in_op()) {
      rec_ = nullptr;
      return;
    }
    costs_ = cost(args...);
    exceptions_ = std::uncaught_exceptions();
    rec_->begin_op(b);
  }
  ~RecordedOp() noexcept(false) {
    if (rec_ == nullptr) [[likely]]
      return;
    if (std::uncaught_exceptions() > exceptions_)
      rec_->abandon_op();
    else
      rec_->end_op(backend_, std::move(costs_));
  }
  RecordedOp(const RecordedOp&) = delete;
  RecordedOp& operator=(const RecordedOp&) = delete;

 private:
  Backend& backend_;
  OpRecorder* rec_;
  OpCosts costs_;
  int exceptions_ = 0;
};

}  // namespace zt
