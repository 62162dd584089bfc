// import_units: the one --init-from path for whole-unit weights (a Hugging Face GPT-2 or Llama
// file): every rank opens its reader, the ranks agree that every one could, then each rank reads
// the units it needs whole and writes the master's ranges it needs, and commits.
#pragma once

#include <functional>
#include <string>

#include "collectives/rank_exchange.h"
#include "runtime/checkpoint/sharded_state.h"
#include "runtime/common/diagnostics.h"

namespace zt::ckpt {

// `opened`: this rank's reader opened (else `problems` says why: thrown as this rank's UserError;
// the other ranks stop naming --init-from `path`). read_unit(u, values) fills unit u's numel fp32
// values in the model's layout. Collective.
void import_units(ShardedState& state, RankExchange& ex, const std::string& path, bool opened,
                  const Diagnostics& problems, const std::function<void(int unit, float* values)>& read_unit);

}  // namespace zt::ckpt
