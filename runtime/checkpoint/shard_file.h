// Shard files: one rank's part of a checkpoint as safetensors — a tensor per (array, owned range),
// each with per-block checksums in the header, the data area 4096-aligned — written from a
// snapshot through BulkIo (hashed while it is written), read back by element range.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/checkpoint/bulk_io.h"
#include "runtime/checkpoint/writer_pacer.h"
#include "runtime/checkpoint/manifest.h"
#include "runtime/checkpoint/safetensors.h"
#include "runtime/checkpoint/sharded_state.h"

namespace zt::ckpt {

// "exp_avg/block3/1024": array, unit name, first element of the owned range.
std::string shard_tensor_name(const std::string& array, const std::string& unit, int64_t begin);

// What one rank file holds, in data order: for each array, for each owned range, its fp32 values.
// Then the rank's private arrays ("private/<name>"), each whole.
struct ShardFileSpec {
  std::vector<std::string> arrays;
  std::vector<ElementRange> owned;
  std::vector<ShardedState::PrivateArray> private_arrays;
  int64_t range_elements() const;  // Σ owned n
  int64_t private_elements() const;  // Σ private n
  int64_t total_elements() const { return int64_t(arrays.size()) * range_elements() + private_elements(); }
};

struct WrittenFile {
  std::string path;
  int64_t bytes = 0;
  uint64_t checksum = 0, header_checksum = 0;
  double seconds = 0;  // hashing, writing and fsync
  IoBreakdown io;      // where those seconds went
  PaceAccount pace;    // the writer's pacing over the hash pass (none without a pacer)
};

// Writes `data` (spec.total_elements() floats in data order; page-aligned for O_DIRECT) to a new
// file at `path` with a checksum per `block_bytes` of each tensor, hashing while `io` writes,
// then the header, fsync, close. `pacer`, when given, sleeps between blocks of the hash pass so
// that this thread's CPU time stays under its share. Throws IoError.
WrittenFile write_shard_file(const std::string& path, const std::vector<UnitLayout>& units, const ShardFileSpec& spec,
                             const float* data, int64_t block_bytes, const StMetadata& extra, BulkIo& io,
                             WriterPacer* pacer = nullptr);

// One rank file of a checkpoint opened for reading, checked against its manifest record.
class ShardFileReader {
 public:
  // Checks the size and header checksum the manifest recorded, the safetensors header, and that
  // the file holds exactly the tensors of its rank's owned ranges. Problems go to `d` (null return).
  static std::unique_ptr<ShardFileReader> open(const std::string& tag_dir, const Manifest& m, int rank, Diagnostics& d);

  // n elements of `array`, from element `offset` of owned range `owned` (one of this rank's).
  // verify: read whole checksum blocks and check them (a mismatch throws UserError naming the
  // file and byte offset); otherwise read exactly the bytes asked for.
  void read(const std::string& array, const ElementRange& owned, int64_t offset, int64_t n, float* out, bool verify) const;
  // The same through `io`, times into `t`. O_DIRECT: whole runs of blocks through its ring, into
  // `out` in place where the pages allow and elsewhere through its aligned scratch, the next runs in
  // flight while this one is checked. Page cache: runs of whole blocks read and checked on
  // io.read_lanes() threads side by side (the kernel's copy out of the page cache runs on the
  // thread that reads, so one thread alone moves the bytes at a fraction of the memory's speed).
  void read(const std::string& array, const ElementRange& owned, int64_t offset, int64_t n, float* out, bool verify,
            BulkIo& io, IoBreakdown& t) const;
  // Reads the whole blocks holding those n elements, as read(..., verify) does, and checks them
  // without keeping the values (a run checks what it will load before it allocates), on read
  // lanes as many as the OpenMP team. False with the first bad block in `problem`.
  bool verify(const std::string& array, const ElementRange& owned, int64_t offset, int64_t n, std::string* problem) const;
  // One of this rank's private arrays, whole (n elements, as the manifest records), its blocks checked.
  void read_private(const std::string& name, int64_t n, float* out) const;
  // Reads and checks every block (checkpoint info); returns the number of bad blocks, each in `d`.
  int verify_all(Diagnostics& d) const;
  uint64_t bytes_read() const { return file_->bytes_read(); }
  int64_t data_start() const { return file_->data_start(); }
  const std::string& path() const { return file_->path(); }

 private:
  const StTensor& tensor(const std::string& array, const ElementRange& owned) const;
  // n elements of tensor t from element `offset`, through the page cache (read()'s plain form).
  void read_elements(const StTensor& t, int64_t offset, int64_t n, float* out, bool verify) const;
  bool check_blocks(const StTensor& t, int64_t first_block, const char* bytes, int64_t nbytes, std::string* problem) const;
  // Tensor bytes [b0, b1) through the page cache on `lanes` threads, into dst (null: only
  // checked), checked when `verify`: read(..., io, t)'s page-cache path and verify(). Returns the
  // first bad block's problem (empty: none); throws IoError.
  std::string scan_cached(const StTensor& t, int64_t b0, int64_t b1, bool verify, char* dst, int lanes,
                          IoBreakdown& times) const;
  std::unique_ptr<SafetensorsFile> file_;
  const Manifest* manifest_ = nullptr;
  int rank_ = 0;
  int64_t block_bytes_ = 0;
  std::map<std::string, std::vector<uint64_t>> blocks_;  // tensor name -> block checksums
};

}  // namespace zt::ckpt
