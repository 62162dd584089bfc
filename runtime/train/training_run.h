// run_training: the main job — a ds_config (or the built-in all-"auto" one) resolved against the
// launch, the pre-flight plan, the ZeRO engine over the model and data, per-step reports, periodic
// validation, and the metrics file.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "collectives/communicator.h"
#include "kernels/backend.h"
#include "runtime/checkpoint/checkpoint_manager.h"
#include "runtime/config/auto_flags.h"
#include "runtime/config/config.h"
#include "runtime/config/config_load.h"
#include "runtime/engine/engine.h"
#include "runtime/model/model_config.h"

namespace zt {

struct RunOptions {
  std::string config_path;    // "" = the built-in config: everything "auto", resolved from flags/defaults
  AutoFlags flags;            // --micro-batch, --lr, --steps, ...
  bool allow_unknown_keys = false;
  ModelConfig model;
  uint64_t seed = 1;          // initialisation, built-in data, sample order
  std::string data_dir;       // "" = built-in synthetic language; else DIR's *train*.bin / *val*.bin shards
  std::string data_train, data_val;  // --data-train GLOB / --data-val GLOB (instead of data_dir)
  int64_t eval_every = 50;    // validation every K steps (0: only after the last step)
  int eval_batches = 4;       // micro-batches per rank per validation
  int64_t sample_every = 0;   // rank 0 prints a sample every K steps (0: never), as llm.c does
  int sample_tokens = 32;     // tokens per sample
  std::string tokenizer;      // tokenizer.json for the samples' text (ids without one)
  // zerotrain eval: the weights (checkpoint.init_from) over the whole validation split, no step.
  bool evaluate_only = false;
  bool recompute = false;     // activation checkpointing: recompute each block in backward
  std::string metrics_path;   // JSON lines, rank 0
  std::string trace_path;     // Chrome trace events of rank 0's steps (compute and collectives)
  bool print = true;          // rank 0's per-step lines
  int local_ranks = 1;        // ranks sharing this host (host RAM in the plan)
  // Ranks per node (NodeTopology): the link class of every collective's bytes. 0: every rank on one
  // node; the command line resolves --ranks-per-node, ZT_RANKS_PER_NODE or MPI's shared-memory split.
  int ranks_per_node = 0;
  // --save, --save-every, --load, --load-tag, --init-from (the config's checkpoint block is added
  // by the run).
  ckpt::CheckpointSettings checkpoint;
};

struct RunReport {
  std::vector<double> losses;
  std::vector<std::pair<int64_t, double>> val_losses;
  int64_t val_tokens = 0, val_windows = 0;  // what the last validation read, over every rank
  double unigram_entropy = 0;
  double tokens_per_s = 0;  // median over steps after the first, whole job
  int64_t params = 0;
  int stage = 0;
  ParamSummary summary;
  int64_t steps_done = 0;
  int64_t first_step = 0;         // the step a --load continued from (0 for a fresh run)
  int stop_signal = 0;            // SIGTERM/SIGINT that stopped the run at a step boundary, 0 when none
  bool checkpoint_saved = false;  // at that boundary (save_before_stop)
  std::vector<std::string> checkpoints;  // tag folders this run saved, in order
  // 0 when the run finished or saved before stopping; 128 + the signal when it stopped without a
  // checkpoint (143 for SIGTERM, 130 for SIGINT, as a shell reports a process the signal ended).
  int exit_code() const { return stop_signal && !checkpoint_saved ? 128 + stop_signal : 0; }
};


// Loads and validates the config for this world size, backend and o.model; every problem is in the
// result's diagnostics (nothing is thrown for bad input).
LoadResult load_run_config(const RunOptions& o, int world_size, ComputeBackend backend);

// Collective: every rank calls it with its communicator and backend. Throws zt::UserError for bad
// input (config, data, plan that cannot fit, ranks whose settings differ, an output that cannot be
// opened or written) before anything large is allocated, and OutputError when an output fails
// mid-run (every rank stops at that step's boundary). SIGTERM/SIGINT stop every rank at the end of
// the current step (see RunReport::exit_code).
RunReport run_training(const RunOptions& o, Communicator& comm, Backend& backend, std::FILE* out = stdout);

}  // namespace zt
