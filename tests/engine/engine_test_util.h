// Shared helpers for the engine tests: one process-wide MPI bootstrap and communicator, the
// built-in data, and a runner that trains the tiny model for a few steps under given options.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collectives/factory.h"
#include "kernels/backend.h"
#include "runtime/data/sampler.h"
#include "runtime/data/synthetic.h"
#include "runtime/engine/engine.h"
#include "runtime/model/model_config.h"

namespace zt::test {

// Set up once in main() (MPI must start before GoogleTest runs any test).
struct World {
  std::unique_ptr<Bootstrap> boot;
  std::unique_ptr<Communicator> comm;
  std::unique_ptr<Backend> backend;
  TokenDataset data;
  std::function<void(int, char**)> at_exit;  // runs on every rank after the tests, before MPI ends
};
World& world();

struct RunResult {
  std::vector<double> losses, norms;
  std::vector<StepStats> stats;
  ParamSummary summary;
  MemCounts resident;  // ledger bytes after the last step (backend memory)
  MemCounts host;      // host memory that offload keeps apart from the backend's
  MemCounts peak;      // the ledger's peak by category, the parameter summary's gathers included
  uint64_t peak_total = 0;
  int64_t skipped = 0;
};

// Global batch of `global_batch` rows split as micro_batch = global / (W * grad_accum).
inline constexpr int kGlobalBatch = 12;
ModelConfig tiny_model(bool tied = true);
// llama-tiny (untied) or llama-tiny-tied with the byte-level data's vocabulary.
ModelConfig tiny_llama_model(bool tied);
EngineOptions base_options(int stage, int grad_accum, DType precision, bool overlap);
RunResult run_engine(const ModelConfig& model, EngineOptions options, int steps);
// The mean of v's last n values (a run's late losses).
double mean_of_last(const std::vector<double>& v, size_t n);
// Every rank's parameter checksum, in rank order (collective over world()).
std::vector<int64_t> rank_checksums(Engine& e);

}  // namespace zt::test
