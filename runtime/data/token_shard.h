// Token shards in llm.c's .bin format: a 256 × int32 header (magic, version, token count), then the
// tokens: magic 20240520 version 1 for uint16 tokens, magic 20240801 version 7 for uint32 tokens.
// Reading validates everything and names the file and offset.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace zt {

inline constexpr int32_t kShardMagic = 20240520;
inline constexpr int32_t kShardVersion = 1;
inline constexpr int32_t kShardMagic32 = 20240801;  // uint32 tokens (vocabularies above 65,536)
inline constexpr int32_t kShardVersion32 = 7;
inline constexpr int kShardHeaderInts = 256;
inline constexpr size_t kShardHeaderBytes = kShardHeaderInts * sizeof(int32_t);

struct ShardHeader {
  int token_bytes = 2;  // 2 (uint16, version 1) or 4 (uint32, version 7)
  int64_t count = 0;    // tokens after the header
};

// Checks a shard's header (the first kShardHeaderInts ints of a file of `file_size` bytes) and that
// the size is the header plus `count` tokens. Throws zt::UserError (file, byte offset, what was
// expected, the fix) on a short header, a wrong magic or version, a negative count or a size that
// does not match.
ShardHeader check_shard_header(const std::string& path, const int32_t* header, size_t file_size);

// Reads a whole uint16 shard. Throws zt::UserError (file, byte offset, what was expected, the fix) on a
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

// Writes a shard (uint16: version 1; uint32: version 7); throws zt::UserError when the file cannot
// be written.
void write_token_shard(const std::string& path, const std::vector<uint16_t>& tokens);
void write_token_shard(const std::string& path, const std::vector<uint32_t>& tokens);

}  // namespace zt
