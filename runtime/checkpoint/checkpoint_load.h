// Loading a checkpoint into a ShardedState: find the tag, check manifest, model and rank files
// before touching anything, then read only the byte ranges this rank's new shard needs (reshard).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/checkpoint/manifest.h"
#include "collectives/rank_exchange.h"
#include "runtime/checkpoint/shard_file.h"
#include "runtime/checkpoint/sharded_state.h"
#include "runtime/common/diagnostics.h"

namespace zt::ckpt {

struct LoadOptions {
  std::string path;  // the save directory (holding `latest`) or one tag directory in it
  std::string tag;   // a tag inside `path`; "" = the one `latest` names
  bool load_optimizer_states = true;  // false: master only (moments stay as the engine made them)
  bool load_counters = true;          // step, applied/skipped counts, loss scaler
  bool verify = true;                 // check every block read against its checksum
  CheckpointIoOptions io;             // how the bytes are read (aio block; page cache or O_DIRECT)
};

// Where a checkpoint is: `path`/`tag`, or the tag `path`/latest names, or `path` itself when it is
// a tag directory. Problems (no such tag, no `latest`) go to `d` with the tags that do exist.
std::string resolve_checkpoint(const std::string& path, const std::string& tag, Diagnostics& d);

// Complete tags under a save directory (those with a manifest), sorted by step.
std::vector<std::string> list_tags(const std::string& dir);

// Everything one rank needs to load, opened and checked; nothing of the state touched yet.
struct LoadPlan {
  Manifest manifest;
  std::string tag_dir;
  std::vector<std::string> arrays;  // what will be written: state.arrays() or {"master"}
  std::map<int, std::unique_ptr<ShardFileReader>> files;  // only the old ranks this rank reads from
  Diagnostics warnings;
};
bool prepare_load(const ShardedState& state, const LoadOptions& o, LoadPlan& plan, Diagnostics& d);
// The part of prepare_load that needs no engine (a run checks it before allocating): the tag, the
// manifest, the model (`units`) and the arrays this run's optimizer loads; no rank file opened.
bool prepare_manifest(const std::vector<UnitLayout>& units, const std::vector<std::string>& arrays,
                      OptimizerType optimizer, const LoadOptions& o, LoadPlan& plan, Diagnostics& d);

// The part of a load's reading that needs no engine either, so that a run finds a damaged checkpoint
// before it allocates: opens the rank files holding any of `needed` (size, safetensors header, its
// checksum against the manifest, the tensors) and reads the whole checksum blocks of plan.arrays
// over `needed` — the bytes load_checkpoint will read again — checking each. Every bad file into `d`
// (its first bad block: file, byte range, tensor) with `fix` and the tags that exist; returns the
// bytes read. plan: from prepare_manifest.
uint64_t verify_needed(const LoadPlan& plan, const std::vector<ElementRange>& needed, const std::string& fix,
                       Diagnostics& d);

struct LoadResult {
  Manifest manifest;
  std::string tag_dir;
  uint64_t bytes_read = 0;     // this rank, headers included
  uint64_t bytes_needed = 0;   // fp32 payload of this rank's needed ranges × arrays loaded
  uint64_t bytes_in_place = 0; // of which read straight into state.write_target(); the rest went
                               // through a buffer and state.write()
  std::vector<int> files_read; // old ranks whose files this rank opened
  double seconds = 0;
  double commit_s = 0;         // of which state.commit() (rebuilding the working copy from the master)
  IoBreakdown io;              // where the reading's seconds went
  Diagnostics warnings;
};

// Collective. Every rank prepares; if any rank cannot load, every rank throws UserError (the
// failing ones with their problems) before any state.write(). Then this rank's needed ranges are
// read piece by piece from the old rank files that hold them (through BulkIo: the aio block, page
// cache or O_DIRECT, hashed as the next run of blocks arrives; into state.write_target() where the
// state offers it, else a buffer handed to state.write()), counters set, commit().
// The checkpoint is only ever opened read-only.
LoadResult load_checkpoint(ShardedState& state, RankExchange& ex, const LoadOptions& o);

}  // namespace zt::ckpt
