// Token shards in the widely used .bin format: a 256 × int32 header (magic 20240520, version 1,
// token count), then uint16 tokens. Reading validates everything and names the file and offset.
#pragma once

#include <cstdint>
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

// Writes a shard; throws zt::UserError when the file cannot be written.
void write_token_shard(const std::string& path, const std::vector<uint16_t>& tokens);

}  // namespace zt
