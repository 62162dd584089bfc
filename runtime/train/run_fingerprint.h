// RunFingerprint: what every rank must agree on before it trains (the resolved config, the model
// shape, the data files, the seed and the run flags) and the start-up check that compares them.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "collectives/communicator.h"
#include "kernels/backend.h"
#include "runtime/common/diagnostics.h"
#include "runtime/config/config.h"
#include "runtime/data/token_dataset.h"
#include "runtime/train/training_run.h"

namespace zt {

struct RunFingerprint {
  // "config.zero_optimization.stage" = "2", "model.dim" = "64", "data.train" = "1058 bytes, ...".
  std::vector<std::pair<std::string, std::string>> items;
  std::string text() const;  // one "key\tvalue" line per item
  uint64_t hash() const;     // FNV-1a of text()
};

RunFingerprint make_run_fingerprint(const RunOptions& o, const Config& c, const TokenDataset& data,
                                    const Backend& backend);

// Compares the ranks' fingerprints (one text per rank) and returns one error per key whose value
// differs, naming the ranks that hold each value ("8 on rank 0; 16 on ranks 1-3"); at most
// `max_keys` keys, then a count of the rest. Empty when all agree.
Diagnostics fingerprint_differences(const std::vector<std::string>& per_rank_text, size_t max_keys = 20);

// Collective, after every rank has loaded its config and data: the ranks exchange a hash of their
// fingerprint and, only when the hashes differ, the whole text. Throws UserError on every rank when
// they disagree (rank 0 lists the keys; the other ranks say so in one line), so no rank trains with
// settings the others do not share and none waits in a collective the others never call.
void agree_on_fingerprint(const RunFingerprint& mine, Communicator& comm, Backend& backend);

}  // namespace zt
