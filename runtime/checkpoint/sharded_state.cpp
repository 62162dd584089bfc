// ShardedState helpers: the fp32 state arrays each optimizer keeps per parameter, and its name.
#include "runtime/checkpoint/sharded_state.h"

namespace zt {

std::vector<std::string> state_arrays_for(OptimizerType optimizer, bool sgd_momentum) {
  std::vector<std::string> a{"master"};
  if (optimizer == OptimizerType::SGD) {
    if (sgd_momentum) a.push_back("momentum_buffer");
  } else {
    a.insert(a.end(), {"exp_avg", "exp_avg_sq"});
    if (optimizer == OptimizerType::OneBitLamb) a.push_back("exp_avg_sq_fresh");
  }
  return a;  // 1 + optimizer_state_arrays(optimizer, sgd_momentum) names
}

const char* checkpoint_optimizer_name(OptimizerType optimizer) {
  switch (optimizer) {
    case OptimizerType::AdamW: return "adamw";
    case OptimizerType::AdamL2: return "adam";
    case OptimizerType::SGD: return "sgd";
    case OptimizerType::Lamb: return "lamb";
    case OptimizerType::OneBitAdam: return "onebit_adam";
    case OptimizerType::ZeroOneAdam: return "zero_one_adam";
    case OptimizerType::OneBitLamb: return "onebit_lamb";
  }
  return "?";
}

}  // namespace zt
