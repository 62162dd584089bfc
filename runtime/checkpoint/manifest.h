// Manifest: the JSON record of one checkpoint tag — format version, world size, stage, precision,
// the partition (units, tensor shapes, each rank's owned ranges and file checksum), counters and run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/checkpoint/sharded_state.h"
#include "runtime/common/diagnostics.h"
#include "runtime/model/model_config.h"
#include "runtime/model/unit_layout.h"

namespace zt::ckpt {

inline constexpr int kFormatVersion = 2;               // bumped on any change a reader must know about
// Version 2 adds each rank's private arrays; a checkpoint without them is written as version 1, so
// that builds reading version 1 only still load it.
inline constexpr int kFormatVersionPrivate = 2;
inline constexpr const char* kFormatName = "zerotrain-checkpoint";
inline constexpr const char* kManifestName = "manifest.json";
inline constexpr const char* kLatestName = "latest";
inline constexpr int64_t kDefaultBlockBytes = int64_t(1) << 20;  // checksum block of a shard file

// What the training loop knows that the engine does not: recorded so that a load can prove the data
// order and schedule continue (the sampler is a function of seed, step and global batch).
struct RunFacts {
  ModelConfig model;
  nlohmann::json config = nlohmann::json::object();  // the resolved ds_config
  uint64_t seed = 0;
  int64_t global_batch = 0;  // samples per optimizer step over all ranks (train_batch_size)
  int micro_batch = 0, grad_accum = 0;
  std::string data;          // where the tokens came from ("built-in synthetic", a path, ...)
  // The rows of the Hugging Face wte the weights were imported from when it had fewer than the
  // model's vocab (the rows past it were added at import); 0: none were added. Carried by --load and
  // --init-from DIR; `export --format hf` writes this many rows.
  int64_t hf_vocab = 0;
};

struct RankFileRecord {
  int rank = 0;
  std::string file;            // name inside the tag directory: rank00003.safetensors
  int64_t bytes = 0;
  uint64_t checksum = 0;         // xxh3 of its data area (every byte after the header)
  uint64_t header_checksum = 0;  // xxh3 of its 8 + N header bytes (which hold the block checksums)
  std::vector<ElementRange> owned;
  std::vector<ShardedState::PrivateArray> private_arrays;  // after the owned ranges' tensors ("private" in JSON)
};

struct Manifest {
  int format_version = kFormatVersion;
  std::string zerotrain_version, zerotrain_commit;
  std::string tag;
  int64_t created_unix = 0;
  int world_size = 1;
  int stage = 0;
  std::string precision, optimizer;
  std::vector<std::string> arrays;  // "master" first
  int64_t block_bytes = kDefaultBlockBytes;
  ModelConfig model;
  std::vector<UnitLayout> units;    // name, numel, tensors (name, offset, shape); init recipes are not stored
  std::vector<RankFileRecord> ranks;
  nlohmann::json counters = nlohmann::json::object();
  RunFacts run;                     // model inside is the same as `model`

  int64_t step() const;             // counters["step"]
  int64_t total_numel() const;      // Σ units' numel
  nlohmann::json to_json() const;
};

std::string rank_file_name(int rank);  // "rank00003.safetensors"

// Parses and checks a manifest (JSON types, format and version, ranges disjoint and covering every
// unit, file names). Every problem goes to `diags` with `path` and the key; returns false if any.
bool parse_manifest(const std::string& text, const std::string& path, Manifest& out, Diagnostics& diags);
// Reads `dir`/manifest.json (missing or unreadable is a diagnostic too).
bool read_manifest(const std::string& tag_dir, Manifest& out, Diagnostics& diags);

// Compares the manifest's units with a model's: every difference (unit count, names, tensor names,
// shapes) is an error at the manifest key, with `fix`.
void check_same_model(const Manifest& m, const std::string& path, const std::vector<UnitLayout>& units,
                      const std::string& fix, Diagnostics& diags);

std::string shape_text(const std::vector<int64_t>& shape);  // "[768, 2304]"
std::string model_text(const ModelConfig& m);                // "12 layers, 12 heads, dim 768, vocab 50257, seq 1024, tied"

}  // namespace zt::ckpt
