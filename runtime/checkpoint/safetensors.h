// safetensors files (Hugging Face's format): a streaming writer, and a reader that validates the
// whole header before any tensor is read and then reads byte ranges with pread, counting them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/checkpoint/checksum.h"
#include "runtime/checkpoint/file_io.h"
#include "runtime/common/diagnostics.h"

namespace zt::ckpt {

// The format: 8 bytes little-endian u64 N, N bytes of UTF-8 JSON (an object: tensor name ->
// {"dtype", "shape", "data_offsets": [begin, end]} plus an optional "__metadata__" object of
// string -> string), then the data area. Offsets are relative to the data area; sorted, the
// tensors tile it exactly (no gap, no overlap) and the last one ends at the end of the file.
enum class StDType { BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64 };
size_t st_dtype_size(StDType t);
const char* st_dtype_name(StDType t);
std::optional<StDType> parse_st_dtype(const std::string& s);

inline constexpr uint64_t kMaxSafetensorsHeader = 100000000;  // the reference implementation's limit

struct StTensor {
  std::string name;
  StDType dtype = StDType::F32;
  std::vector<int64_t> shape;
  int64_t begin = 0, end = 0;  // data_offsets, bytes from the start of the data area
  int64_t numel() const;
  int64_t bytes() const { return end - begin; }
};

using StMetadata = std::map<std::string, std::string>;

// Writes header then data, tensors in the order given (their offsets are assigned here). The data
// must be appended in that order; each byte also feeds a running checksum of the data area.
class SafetensorsWriter {
 public:
  // data_alignment: the header is padded with spaces so that the data area starts at a multiple
  // of it (8 as the reference writer does; 4096 for shard files, whose data goes O_DIRECT).
  SafetensorsWriter(FileWriter& out, std::vector<StTensor> tensors, const StMetadata& metadata,
                    int64_t data_alignment = 8);
  void append(const void* data, size_t bytes);
  // Counts and hashes the next `bytes` of the data area, which the caller writes itself (at
  // header_bytes() + the bytes counted so far).
  void account(const void* data, size_t bytes);
  void finish();  // throws std::logic_error when fewer bytes were appended than the header declares
  // Writes the header again with new metadata (known only once the data is written, e.g. its
  // checksums) in place; its serialized size must not change (std::logic_error otherwise).
  void rewrite_header(const StMetadata& metadata);
  const std::vector<StTensor>& tensors() const { return tensors_; }
  int64_t header_bytes() const { return header_bytes_; }  // 8 + N
  int64_t file_bytes() const { return header_bytes_ + data_bytes_; }
  uint64_t header_checksum() const { return header_checksum_; }  // xxh3 of the first 8 + N bytes
  uint64_t data_checksum() const { return hash_.digest(); }  // xxh3 of the data area

 private:
  std::string header(const StMetadata& metadata) const;
  FileWriter& out_;
  std::vector<StTensor> tensors_;
  int64_t alignment_ = 8;
  int64_t header_bytes_ = 0, data_bytes_ = 0, written_ = 0;
  uint64_t header_checksum_ = 0;
  StreamHash hash_;
};

// An opened, validated safetensors file.
class SafetensorsFile {
 public:
  // Validates the size, the header length, the JSON, every entry (dtype, shape, offsets against
  // its size), overlaps, gaps and the file's end. Each problem goes to `diags` as an error naming
  // the file, the byte offset or key, what was expected and `fix`; returns null when there was one.
  static std::unique_ptr<SafetensorsFile> open(const std::string& path, Diagnostics& diags, const std::string& fix);

  const std::string& path() const { return file_.path(); }
  const std::vector<StTensor>& tensors() const { return tensors_; }  // in offset order
  const StTensor* find(const std::string& name) const;
  const StMetadata& metadata() const { return metadata_; }
  int64_t data_start() const { return data_start_; }  // 8 + N: the data area's file offset
  int64_t file_bytes() const { return file_.size(); }
  uint64_t header_checksum() const { return header_checksum_; }
  // Reads `bytes` bytes of tensor t from byte `offset` inside it (checked against its extent).
  void read(const StTensor& t, int64_t offset, size_t bytes, void* out) const;
  uint64_t bytes_read() const { return file_.bytes_read(); }  // header included
  const FileReader& file() const { return file_; }  // for reads the caller issues itself (BulkIo)

 private:
  explicit SafetensorsFile(FileReader f) : file_(std::move(f)) {}
  FileReader file_;
  std::vector<StTensor> tensors_;
  std::map<std::string, size_t> index_;
  StMetadata metadata_;
  int64_t data_start_ = 0;
  uint64_t header_checksum_ = 0;
};

}  // namespace zt::ckpt
