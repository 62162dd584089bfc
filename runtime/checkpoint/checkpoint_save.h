// Saving a checkpoint: tag agreement across ranks, a snapshot of the rank's state into pinned host
// memory, the shard file written on a background thread, then manifest, rename and `latest`.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "offload/pinned_memory.h"
#include "runtime/checkpoint/bulk_io.h"
#include "runtime/checkpoint/manifest.h"
#include "collectives/rank_exchange.h"
#include "runtime/checkpoint/sharded_state.h"
#include "runtime/checkpoint/writer_pacer.h"

namespace zt::ckpt {

struct SaveOptions {
  std::string dir;                       // the save directory: DIR/latest, DIR/<tag>/
  std::string tag_validation = "Warn";   // checkpoint.tag_validation: Ignore | Warn | Fail (any case)
  bool node_local_storage = false;       // checkpoint.use_node_local_storage (see docs/checkpoints.md)
  int64_t block_bytes = kDefaultBlockBytes;
  bool pin_memory = true;                // the snapshot buffer
  std::function<void(const std::string&)> warn;  // warnings (default: stderr, rank 0)
  CheckpointIoOptions io;                // how the shard file is written (aio block, O_DIRECT)
  // The background writer's nice level (and its I/O thread's): 19 lets the step's threads take
  // the cores whenever they want them; 0 leaves it at the run's own priority.
  int writer_nice = 19;
  // The background writer's share of one core, in (0, 1]: below 1 it sleeps between checksum
  // blocks so that its thread's CPU seconds stay under share × its wall seconds (WriterPacer).
  // 1 (the default) never sleeps. The ring's I/O thread (the copy into the page cache where
  // O_DIRECT is off or refused) is not paced.
  double writer_cpu_share = 1.0;
};

struct SaveResult {
  bool ok = false;
  std::string tag, tag_dir;
  std::string message;       // one line: what was saved, or what failed and what is untouched
  int64_t step = 0;
  int64_t bytes = 0;         // this rank's file
  int64_t total_bytes = 0;   // every rank's files and the manifest
  double snapshot_s = 0;     // state.read() into the snapshot (the part training waits for)
  double write_s = 0;        // this rank's file: hashing, writing, fsync (in the background)
  double total_s = 0;        // from begin() to the save being complete (`latest` replaced)
  double commit_s = 0;       // the leader's manifest, fsyncs, folder rename and `latest`
  double writer_cpu_s = 0;   // CPU seconds of the background writer thread (hash, submissions, page-cache copies)
  IoBreakdown io;            // where write_s went
  PaceAccount pace;          // what the writer's pacing did (sleeps, its CPU and wall seconds)
  int writer_nice = 0;       // the nice level the writer thread ran at (read back from the kernel)
};

std::string default_tag(int64_t step);  // "global_step<step>", DeepSpeed's

// One per run. A save is in flight from begin() until poll() or finish() completes it; the next
// begin() first finishes the one in flight. Each completed save (ok or failed) is queued for
// take_results(). Every method except pending() and take_results() is collective: all ranks call
// it at the same point of the run (poll() after each step while pending(), say).
//
// On disk, a save writes into DIR/.<tag>.saving-<id>/ (rank files, then the manifest), renames
// that folder to DIR/<tag> (swapping out an older save of the same tag in one step), fsyncs DIR,
// and replaces DIR/latest last. A save that fails, or is killed at any moment, leaves the
// previous tags and `latest` as they were; its staging folder is removed (or, after a kill, by
// the next save).
class CheckpointWriter {
 public:
  CheckpointWriter(RankExchange& ex, SaveOptions o);
  ~CheckpointWriter();  // waits for a write in flight; the save stays unfinished (no `latest`)
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Finishes the save in flight, agrees on the tag (tag_validation Fail: UserError on every rank
  // when ranks disagree; Warn and Ignore use rank 0's), snapshots the state and starts writing.
  void begin(ShardedState& state, const RunFacts& facts, const std::string& tag);
  // Completes the save in flight if every rank's file is written; true when it did.
  bool poll();
  // Waits for the save in flight and completes it.
  void finish();
  // begin() + finish(); returns that save's result.
  SaveResult save(ShardedState& state, const RunFacts& facts, const std::string& tag);
  // Allocates and touches the snapshot for `state` (every array of its owned ranges) now, so that
  // the first begin() copies into memory already held rather than making the step wait while the
  // kernel finds and pins it, and the run's ledger can count it from the start. Returns its bytes.
  size_t reserve(const ShardedState& state);

  bool pending() const { return pending_ != nullptr; }
  std::deque<SaveResult> take_results();

 private:
  struct Pending;
  void complete();
  void hold_snapshot(size_t bytes);
  bool leader() const { return leader_; }
  RankExchange& ex_;
  SaveOptions o_;
  bool leader_ = false;   // writes the manifest and `latest` (rank 0; with node-local storage, each host's first rank)
  offload::PinnedAllocator alloc_;
  std::unique_ptr<BulkIo> io_;
  offload::PinnedBuffer snapshot_;
  std::unique_ptr<Pending> pending_;
  std::deque<SaveResult> results_;
};

}  // namespace zt::ckpt
