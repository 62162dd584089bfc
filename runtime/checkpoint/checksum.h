// Checksums of checkpoint bytes: XXH3-64 (libxxhash), one-shot or streamed, and its hex form as
// the manifest and shard headers store it ("xxh3:0123456789abcdef").
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace zt::ckpt {

uint64_t xxh3(const void* data, size_t bytes);

// Streamed XXH3-64 over bytes fed in order.
class StreamHash {
 public:
  StreamHash();
  ~StreamHash();
  StreamHash(const StreamHash&) = delete;
  StreamHash& operator=(const StreamHash&) = delete;
  void update(const void* data, size_t bytes);
  uint64_t digest() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

std::string checksum_text(uint64_t h);                         // "xxh3:%016x"
std::optional<uint64_t> parse_checksum_text(const std::string& s);  // nullopt when malformed

}  // namespace zt::ckpt
