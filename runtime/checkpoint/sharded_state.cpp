// ShardedState helpers: the fp32 state arrays each optimizer keeps per parameter.
#include "runtime/checkpoint/sharded_state.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace zt {

std::vector<std::string> state_arrays_for(const std::string& optimizer, bool sgd_momentum) {
  std::string o = optimizer;
  std::transform(o.begin(), o.end(), o.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (o == "adam" || o == "adamw" || o == "lamb") return {"master", "exp_avg", "exp_avg_sq"};
  if (o == "sgd") return sgd_momentum ? std::vector<std::string>{"master", "momentum_buffer"}
                                      : std::vector<std::string>{"master"};
  throw std::invalid_argument("unknown optimizer '" + optimizer + "' (expected adam, adamw, sgd or lamb)");
}

}  // namespace zt
