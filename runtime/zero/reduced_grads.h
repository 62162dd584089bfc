// ReducedGrads: what the gradient side hands the optimizer after a step's reductions — per unit, a
// view of this rank's reduced gradient sum in backend memory (the working type, state_len elements
// from state element 0; the rest of the unit's buffer is not the optimizer's). A plain view, so the
// optimizer needs nothing of how the sums were made (Megatron's Range views over its buffer).
#pragma once

#include <vector>

namespace zt {

struct ReducedGrads {
  std::vector<void*> unit;  // unit[u]: this rank's reduced sum of unit u
};

}  // namespace zt
