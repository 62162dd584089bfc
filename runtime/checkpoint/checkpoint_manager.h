// CheckpointManager: what the training loop calls for --save / --save-every / --load / --init-from
// — load at start, save at step boundaries in the background, finish at the end — with its reports.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "collectives/communicator.h"
#include "kernels/backend.h"
#include "runtime/checkpoint/checkpoint_load.h"
#include "runtime/checkpoint/checkpoint_save.h"
#include "runtime/checkpoint/manifest.h"
#include "collectives/rank_exchange.h"
#include "runtime/checkpoint/sharded_state.h"

namespace zt::ckpt {

struct CheckpointSettings {
  std::string save_dir;        // --save DIR ("" = no saves)
  int64_t save_every = 0;      // --save-every N (0: only at the end of the run)
  bool background = true;      // write while training goes on (false: every save completes in its step)
  std::string load_dir;        // --load DIR[/TAG] ("" = start fresh)
  std::string load_tag;        // --load-tag T
  bool load_optimizer_states = true;
  std::string init_from;       // --init-from FILE (Hugging Face GPT-2 or zerotrain export), a Hugging Face
                               // Llama folder or file (by the model's family), or DIR[/TAG] (a zerotrain
                               // checkpoint: weights only); not with --load
  // The ds_config's checkpoint block.
  std::string tag_validation = "Warn";
  bool load_universal = false;        // accepted: every zerotrain checkpoint is universal
  bool use_node_local_storage = false;
  offload::AioConfig aio;             // the ds_config's aio block: checkpoint reads and writes use it too
  // zerotrain's own switches (run flags; DeepSpeed's config has no such keys).
  bool direct_reads = false;          // --load-direct: loads read O_DIRECT (default: the page cache)
  int writer_nice = 19;               // --save-writer-nice N, 0..19
  double writer_cpu_percent = 100;    // --save-writer-cpu-percent P, (0, 100]: the writer's share of one core
};

// Wiring for the loop (collective methods, called by every rank at the same points):
//   CheckpointManager ckpt(state, comm, staging, facts, settings, rank0_out);
//   int64_t first = ckpt.start();          // load or init-from; the step to continue from
//   for (s = first; s < steps; ++s) { train_step(s); ckpt.after_step(s + 1); }
//   ckpt.at_end(steps);                    // final save unless just saved; waits for the write
class CheckpointManager {
 public:
  CheckpointManager(ShardedState& state, Communicator& comm, Backend* staging, RunFacts facts, CheckpointSettings s,
                    std::FILE* say);
  ~CheckpointManager();

  // Loads (--load) or initialises the weights (--init-from); returns the step to continue from.
  // Throws UserError on bad input (every rank, before any state is written).
  int64_t start();
  // After the optimizer step that brought the run to `step` steps: completes a background save
  // whose files are all written and starts one when `step` is a multiple of save_every.
  void after_step(int64_t step);
  // After the last step: saves `step` (unless that step was just saved) and waits for the write.
  // A failed final save throws UserError (the run must not end as if it had been saved).
  void at_end(int64_t step);

  bool saving() const { return writer_ != nullptr; }  // --save was given
  // The writer's snapshot, held from construction when saving (CheckpointWriter::reserve): host
  // bytes the run counts on its ledger; 0 without --save.
  size_t snapshot_bytes() const { return snapshot_bytes_; }
  const std::vector<SaveResult>& saves() const { return saves_; }
  const std::optional<LoadResult>& loaded() const { return loaded_; }

 private:
  void report(std::deque<SaveResult> done, bool final_save);
  ShardedState& state_;
  RankExchange ex_;
  RunFacts facts_;
  CheckpointSettings s_;
  std::FILE* say_;
  std::unique_ptr<CheckpointWriter> writer_;
  int64_t last_saved_ = -1;
  size_t snapshot_bytes_ = 0;
  std::vector<SaveResult> saves_;
  std::optional<LoadResult> loaded_;
};

// A run that resumes with a different seed or global batch (the data order would differ from the
// uninterrupted run's): errors naming both values; a different precision: a warning.
Diagnostics compare_run(const Manifest& m, const RunFacts& now, const std::string& precision_now);

// The flags together: --save-every without --save, --load-tag without --load, --init-from with --load;
// --save-writer-nice outside 0..19, --save-writer-cpu-percent outside (0, 100].
void check_settings(const CheckpointSettings& s, Diagnostics& d);
// --init-from names a directory: a zerotrain checkpoint (DIR with `latest`, or DIR/TAG) whose fp32
// master the run starts from, with fresh optimizer state at step 0 (a weights-only load); not a
// folder of Hugging Face weights (one holding model.safetensors or model.safetensors.index.json).
bool is_weights_only(const CheckpointSettings& s);
// What a run checks before it allocates anything (every problem into `d`): the flags; --save names a
// folder this user can write or create; for --load the tag, the manifest, the model, the optimizer's
// arrays, every rank file present, the seed and global batch (compare_run) and a checkpoint past
// `steps`; for --init-from DIR the tag, the manifest, the model and every rank file; for both, the
// rank files holding `needed` (the ranges this rank's engine will load) opened and every checksum
// block of those ranges read and checked (verify_needed); for --init-from FILE the file's tensors
// and config.
void check_before_start(const CheckpointSettings& s, const RunFacts& facts, const std::string& precision,
                        OptimizerType optimizer, bool sgd_momentum, int64_t steps, const std::vector<ElementRange>& needed,
                        Diagnostics& d);

}  // namespace zt::ckpt
