// EventFileWriter: TFRecord framing (length, masked CRC of the length, payload, masked CRC of the
// payload) around protobuf-encoded Event messages; CRC32C from ISA-L's crc32_iscsi.
#include "runtime/monitor/tb_event_writer.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>

#include <isa-l/crc.h>

#include "tb_event.pb.h"

namespace zt {

uint32_t crc32c(const void* data, size_t n) {
  // ISA-L's iSCSI CRC is CRC32C without the final inversion: seed with all ones, invert the result.
  uint32_t crc = 0xFFFFFFFFu;
  const auto* p = static_cast<const unsigned char*>(data);
  constexpr size_t kChunk = size_t(1) << 30;  // crc32_iscsi takes an int length
  while (n > 0) {
    const size_t take = n < kChunk ? n : kChunk;
    crc = crc32_iscsi(const_cast<unsigned char*>(p), int(take), crc);
    p += take;
    n -= take;
  }
  return crc ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(const void* data, size_t n) {
  const uint32_t c = crc32c(data, n);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

namespace {
std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}
}  // namespace

EventFileWriter::EventFileWriter(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir.empty() ? "." : dir, ec);
  if (ec) throw std::runtime_error("cannot create the folder " + dir + ": " + ec.message());
  const long secs = long(unix_seconds());
  path_ = (std::filesystem::path(dir.empty() ? "." : dir) /
           ("events.out.tfevents." + std::to_string(secs) + "." + host_name() + "." + std::to_string(getpid()) + ".0"))
              .string();
  file_ = std::fopen(path_.c_str(), "wb");
  if (!file_) throw std::runtime_error("cannot create the event file " + path_ + ": " + std::strerror(errno));
  tb::Event e;
  e.set_wall_time(unix_seconds());
  e.set_step(0);
  e.set_file_version("brain.Event:2");
  write_record(e.SerializeAsString());
  flush();
}

EventFileWriter::~EventFileWriter() {
  if (file_) std::fclose(file_);
}

void EventFileWriter::add_scalar(const std::string& tag, float value, int64_t step, double wall_time) {
  tb::Event e;
  e.set_wall_time(wall_time);
  e.set_step(step);
  tb::SummaryValue* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(value);
  write_record(e.SerializeAsString());
}

void EventFileWriter::write_record(const std::string& payload) {
  unsigned char header[12];
  const uint64_t len = payload.size();
  for (int i = 0; i < 8; ++i) header[i] = static_cast<unsigned char>(len >> (8 * i));  // little-endian
  const uint32_t len_crc = masked_crc32c(header, 8);
  for (int i = 0; i < 4; ++i) header[8 + i] = static_cast<unsigned char>(len_crc >> (8 * i));
  const uint32_t data_crc = masked_crc32c(payload.data(), payload.size());
  unsigned char footer[4];
  for (int i = 0; i < 4; ++i) footer[i] = static_cast<unsigned char>(data_crc >> (8 * i));
  if (std::fwrite(header, 1, sizeof header, file_) != sizeof header ||
      std::fwrite(payload.data(), 1, payload.size(), file_) != payload.size() ||
      std::fwrite(footer, 1, sizeof footer, file_) != sizeof footer)
    throw std::runtime_error("writing the event file " + path_ + " failed: " + std::strerror(errno));
}

void EventFileWriter::flush() {
  if (std::fflush(file_) != 0)
    throw std::runtime_error("writing the event file " + path_ + " failed: " + std::strerror(errno));
}

}  // namespace zt
