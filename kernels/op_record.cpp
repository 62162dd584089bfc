// Op records: the recorder's scopes and the timing of each recorded op.
#include "kernels/op_record.h"

#include <stdexcept>

namespace zt {

void OpRecorder::clear() {
  if (current_ >= 0 || in_op_) throw std::logic_error("OpRecorder::clear inside a scope or an op");
  records_.clear();
  scopes_.clear();
}

int64_t OpRecorder::open_scope(int unit, OpPass pass) {
  const int64_t previous = current_;
  scopes_.push_back({unit, pass});
  current_ = int64_t(scopes_.size()) - 1;
  return previous;
}

void OpRecorder::begin_op(Backend& b) {
  b.synchronize();
  in_op_ = true;
  start_ = Clock::now();
}

void OpRecorder::end_op(Backend& b, OpCosts costs) {
  in_op_ = false;
  b.synchronize();
  const double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  for (OpCost& c : costs) {
    OpRecord r;
    r.seconds = c.fused ? 0.0 : seconds;
    r.cost = std::move(c);
    if (current_ >= 0) {
      r.scope = current_;
      r.unit = scopes_[size_t(current_)].unit;
      r.pass = scopes_[size_t(current_)].pass;
    }
    records_.push_back(std::move(r));
  }
}

void OpRecorder::abandon_op() { in_op_ = false; }

}  // namespace zt
