// Token shards in the widely used .bin format: a 256 × int32 header (magic 20240520, version 1,
// token count), then uint16 tokens. Reading validates everything and names the file and offset.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace zt {

inline constexpr int32_t kShardMagic = 20240520;
inline constexpr int32_t kShardVersion = 1;
inline constexpr int kShardHeaderInts = 256;
inline constexpr size_t kShardHeaderBytes = kShardHeaderInts * sizeof(int32_t);

// Reads a whole shard. Throws zt::UserError (file, byte offset, what was expected, the fix) on a
// missing or unreadable file, a short header, a wrong magic or version, a negative count, or a
// size that does not match the count.
std::vector<uint16_t> read_token_shard(const std::string& path);

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

// Opens `path` for reading, never blocking on a FIFO. Throws zt::UserError naming the path, the
// errno text or what the path is instead (a directory, a FIFO, a device: "the <what> must be a
// regular file"); `what` names the file's role ("token shard", "--text input").
File open_regular_file(const std::string& path, const std::string& what, const std::string& fix_if_missing);

// What ranks compare to know they read the same shard: the size and an FNV-1a hash of the header
// and the first and last 64 KiB. {0, 0} when the file cannot be read.
struct ShardIdentity {
  uint64_t size = 0, hash = 0;
};
ShardIdentity shard_identity(const std::string& path);

// Writes a shard; throws zt::UserError when the file cannot be written.
void write_token_shard(const std::string& path, const std::vector<uint16_t>& tokens);

}  // namespace zt
