// Reading and writing .bin token shards, with every header field and the file size validated.
#include "runtime/data/token_shard.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "runtime/common/diagnostics.h"

namespace zt {

namespace {

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

std::string at(const std::string& path, size_t offset) { return path + ":byte " + std::to_string(offset); }

}  // namespace

std::vector<uint16_t> read_token_shard(const std::string& path) {
  File f(std::fopen(path.c_str(), "rb"));
  if (!f)
    throw UserError(path, "", std::string("cannot open token shard: ") + std::strerror(errno),
                    "check the path, or run `zerotrain prepare --text FILE --out DIR` to make shards");
  if (std::fseek(f.get(), 0, SEEK_END) != 0)
    throw UserError(path, "", std::string("cannot seek: ") + std::strerror(errno), "use a regular file");
  const long size_l = std::ftell(f.get());
  if (size_l < 0) throw UserError(path, "", std::string("cannot size: ") + std::strerror(errno), "use a regular file");
  const size_t size = size_t(size_l);
  std::rewind(f.get());
  if (size < kShardHeaderBytes)
    throw UserError(at(path, size), std::to_string(size) + " bytes",
                    "file ends inside the header: a token shard starts with a " +
                        std::to_string(kShardHeaderBytes) + "-byte header (256 int32)",
                    "the file is truncated or not a token shard; regenerate it");
  int32_t header[kShardHeaderInts];
  if (std::fread(header, sizeof(int32_t), kShardHeaderInts, f.get()) != size_t(kShardHeaderInts))
    throw UserError(at(path, 0), "", std::string("cannot read the header: ") + std::strerror(errno), "");
  if (header[0] != kShardMagic)
    throw UserError(at(path, 0), std::to_string(header[0]),
                    "wrong magic number: expected " + std::to_string(kShardMagic) + " for a .bin token shard",
                    "this is not a token shard; make one with `zerotrain prepare`");
  if (header[1] != kShardVersion)
    throw UserError(at(path, 4), std::to_string(header[1]),
                    "unsupported shard version: expected " + std::to_string(kShardVersion) +
                        " (uint16 tokens)",
                    "regenerate the shard in version 1 format");
  const int64_t count = header[2];
  if (count < 0)
    throw UserError(at(path, 8), std::to_string(count), "negative token count", "regenerate the shard");
  const size_t expected = kShardHeaderBytes + size_t(count) * sizeof(uint16_t);
  if (size < expected)
    throw UserError(at(path, size), std::to_string(count) + " tokens",
                    "header promises " + std::to_string(count) + " tokens (" + std::to_string(expected) +
                        " bytes in all) but the file has " + std::to_string(size) + " bytes",
                    "the file is truncated; regenerate or re-copy it");
  if (size > expected)
    throw UserError(at(path, expected), std::to_string(size) + " bytes",
                    "file is longer than header + " + std::to_string(count) + " tokens (" +
                        std::to_string(expected) + " bytes)",
                    "the header's token count is wrong or the file has trailing data; regenerate it");
  std::vector<uint16_t> tokens(static_cast<size_t>(count));
  if (count > 0 && std::fread(tokens.data(), sizeof(uint16_t), size_t(count), f.get()) != size_t(count))
    throw UserError(at(path, kShardHeaderBytes), "", std::string("short read: ") + std::strerror(errno), "");
  return tokens;
}

void write_token_shard(const std::string& path, const std::vector<uint16_t>& tokens) {
  if (tokens.size() > size_t(INT32_MAX))
    throw UserError(path, std::to_string(tokens.size()), "too many tokens for one shard (int32 count)",
                    "split the data into several shards");
  File f(std::fopen(path.c_str(), "wb"));
  if (!f)
    throw UserError(path, "", std::string("cannot create token shard: ") + std::strerror(errno),
                    "check that the output directory exists and is writable");
  int32_t header[kShardHeaderInts] = {};
  header[0] = kShardMagic;
  header[1] = kShardVersion;
  header[2] = int32_t(tokens.size());
  bool ok = std::fwrite(header, sizeof(int32_t), kShardHeaderInts, f.get()) == size_t(kShardHeaderInts);
  ok = ok && (tokens.empty() ||
              std::fwrite(tokens.data(), sizeof(uint16_t), tokens.size(), f.get()) == tokens.size());
  ok = (std::fclose(f.release()) == 0) && ok;
  if (!ok)
    throw UserError(path, "", std::string("write failed: ") + std::strerror(errno), "check free disk space");
}

}  // namespace zt
