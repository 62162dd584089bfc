// EventFileWriter: a TensorBoard event file (events.out.tfevents.*) of scalar summaries — protobuf
// Event records in TFRecord framing, each length and payload guarded by a masked CRC32C (ISA-L).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace zt {

// CRC32C (Castagnoli), as TFRecord uses it, and TFRecord's masked form of it.
uint32_t crc32c(const void* data, size_t n);
uint32_t masked_crc32c(const void* data, size_t n);

class EventFileWriter {
 public:
  // Creates `dir` (and its parents) and a new event file in it; the first record is the file
  // version. Throws std::runtime_error naming the path and the system's reason.
  explicit EventFileWriter(const std::string& dir);
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  void add_scalar(const std::string& tag, float value, int64_t step, double wall_time);
  // Throws std::runtime_error with the path and errno when the data could not be written.
  void flush();
  const std::string& path() const { return path_; }

 private:
  void write_record(const std::string& payload);
  std::string path_;
  std::FILE* file_ = nullptr;
};

// Wall-clock seconds since the Unix epoch, as TensorBoard's wall_time.
double unix_seconds();

}  // namespace zt
