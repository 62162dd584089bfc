// Helpers for the checkpoint tests: temporary folders, a fingerprint of a folder tree (to prove a
// load changed nothing), and saves / loads of fake states at a given world size and stage.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/checkpoint/checkpoint_load.h"
#include "runtime/checkpoint/checkpoint_save.h"
#include "runtime/model/model_config.h"
#include "tests/checkpoint/fake_state.h"

namespace zt::test {

// A fresh folder under $TMPDIR (or /tmp), removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Every file and folder under `dir` with its size, modification time and content hash.
std::string tree_fingerprint(const std::string& dir);

// Whether `dir`'s file system accepts O_DIRECT opens (probed with a scratch file, removed after).
bool takes_direct(const std::string& dir);

// A small GPT-2 whose units do not divide evenly by 3 or 4 (so shards have ragged ends).
ModelConfig small_model();
// The larger model the kill -9 driver saves (about 0.5 M parameters, 6 MiB per save).
ModelConfig kill_driver_model();

// Saves generation `gen` of fake states at world `world`, stage `stage` into `dir` (tag
// "global_step<gen>" unless given); returns rank 0's result.
ckpt::SaveResult save_fake(const std::string& dir, const ModelConfig& m, int world, int stage, int64_t gen,
                           ckpt::SaveOptions opt = {}, const std::string& tag = "",
                           OptimizerType optimizer = OptimizerType::AdamW);

struct LoadCheck {
  int64_t mismatches = 0;      // elements (over every rank and loaded array) not equal to the saved generation
  int64_t rewritten = 0;       // elements written more than once
  int commits = 0;             // Σ over ranks
  bool counters_equal = true;  // each rank's counters equal the saved ones
  int64_t unloaded_changed = 0;  // with `prefill`: elements of the arrays not loaded that no longer hold it
  uint64_t bytes_read = 0, bytes_needed = 0, header_bytes = 0;
  std::vector<ckpt::LoadResult> results;
};
// Loads `dir` into fresh fake states at world `world`, stage `stage` and compares with generation `gen`.
// prefill >= 0: every rank's state holds generation `prefill` before the load.
LoadCheck load_fake(const ckpt::LoadOptions& o, const ModelConfig& m, int world, int stage, int64_t gen,
                    OptimizerType optimizer = OptimizerType::AdamW, int64_t prefill = -1);

}  // namespace zt::test
