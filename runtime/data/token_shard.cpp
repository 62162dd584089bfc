// Reading and writing .bin token shards, with every header field and the file size validated.
#include "runtime/data/token_shard.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/common/diagnostics.h"

namespace zt {

namespace {

std::string at(const std::string& path, size_t offset) { return path + ":byte " + std::to_string(offset); }

// FNV-1a over bytes, continuing from h.
uint64_t fnv1a(const unsigned char* p, size_t n, uint64_t h) {
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}


}  // namespace

ShardHeader check_shard_header(const std::string& path, const int32_t* header, size_t size) {
  if (size < kShardHeaderBytes)
    throw UserError(at(path, size), std::to_string(size) + " bytes",
                    "file ends inside the header: a token shard starts with a " +
                        std::to_string(kShardHeaderBytes) + "-byte header (256 int32)",
                    "the file is truncated or not a token shard; regenerate it");
  if (header[0] != kShardMagic && header[0] != kShardMagic32)
    throw UserError(at(path, 0), std::to_string(header[0]),
                    "wrong magic number: expected " + std::to_string(kShardMagic) + " (uint16 tokens) or " +
                        std::to_string(kShardMagic32) + " (uint32 tokens) for a .bin token shard",
                    "this is not a token shard; make one with scripts/prepare_data.py or `zerotrain prepare`");
  const bool wide = header[0] == kShardMagic32;
  const int32_t version = wide ? kShardVersion32 : kShardVersion;
  if (header[1] != version)
    throw UserError(at(path, 4), std::to_string(header[1]),
                    "unsupported shard version: expected " + std::to_string(version) + " with magic " + std::to_string(header[0]) +
                        (wide ? " (uint32 tokens)" : " (uint16 tokens)"),
                    "regenerate the shard with scripts/prepare_data.py");
  ShardHeader h;
  h.token_bytes = wide ? 4 : 2;
  h.count = header[2];
  if (h.count < 0)
    throw UserError(at(path, 8), std::to_string(h.count), "negative token count", "regenerate the shard");
  const size_t expected = kShardHeaderBytes + size_t(h.count) * size_t(h.token_bytes);
  if (size < expected)
    throw UserError(at(path, size), std::to_string(h.count) + " tokens",
                    "header promises " + std::to_string(h.count) + " tokens (" + std::to_string(expected) +
                        " bytes in all) but the file has " + std::to_string(size) + " bytes",
                    "the file is truncated; regenerate or re-copy it");
  if (size > expected)
    throw UserError(at(path, expected), std::to_string(size) + " bytes",
                    "file is longer than header + " + std::to_string(h.count) + " tokens (" +
                        std::to_string(expected) + " bytes)",
                    "the header's token count is wrong or the file has trailing data; regenerate it");
  return h;
}

std::vector<uint16_t> read_token_shard(const std::string& path) {
  File f = open_regular_file(path, "token shard",
                             "check the path, or run `zerotrain prepare --text FILE --out DIR` to make shards");
  struct stat st{};
  if (fstat(fileno(f.get()), &st) != 0)
    throw UserError(path, "", std::string("cannot size: ") + std::strerror(errno), "use a regular file");
  const size_t size = size_t(st.st_size);
  int32_t header[kShardHeaderInts] = {};
  if (size >= kShardHeaderBytes && std::fread(header, sizeof(int32_t), kShardHeaderInts, f.get()) != size_t(kShardHeaderInts))
    throw UserError(at(path, 0), "", std::string("cannot read the header: ") + std::strerror(errno), "");
  const ShardHeader h = check_shard_header(path, header, size);
  if (h.token_bytes != 2)
    throw UserError(at(path, 0), std::to_string(header[0]), "a uint32 shard where uint16 tokens are read",
                    "read it through --data, which reads both widths");
  std::vector<uint16_t> tokens(static_cast<size_t>(h.count));
  if (h.count > 0 && std::fread(tokens.data(), sizeof(uint16_t), size_t(h.count), f.get()) != size_t(h.count))
    throw UserError(at(path, kShardHeaderBytes), "", std::string("short read: ") + std::strerror(errno), "");
  return tokens;
}

File open_regular_file(const std::string& path, const std::string& what, const std::string& fix_if_missing) {
  // O_NONBLOCK: opening a FIFO without a writer must not wait; cleared once it is known regular.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw UserError(path, "", "cannot open the " + what + ": " + std::strerror(errno), fix_if_missing);
  struct stat st{};
  const int rc = fstat(fd, &st);
  const int err = errno;
  if (rc != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    if (rc != 0) throw UserError(path, "", "cannot stat the " + what + ": " + std::strerror(err), fix_if_missing);
    const char* kind = S_ISDIR(st.st_mode)    ? "a directory"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a regular file";
    throw UserError(path, kind, "the " + what + " must be a regular file",
                    "give the path of a file, not " + std::string(kind));
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  std::FILE* f = fdopen(fd, "rb");
  if (!f) {
    const int e = errno;
    ::close(fd);
    throw UserError(path, "", "cannot open the " + what + ": " + std::strerror(e), fix_if_missing);
  }
  return File(f);
}

ShardIdentity shard_identity(const std::string& path) {
  ShardIdentity id;
  File f;
  try {
    f = open_regular_file(path, "token shard", "");
  } catch (const UserError&) {
    return id;
  }
  struct stat st{};
  if (fstat(fileno(f.get()), &st) != 0) return id;
  id.size = uint64_t(st.st_size);
  // The header and the first and last 64 KiB of tokens: cheap, and two different files of one
  // size almost never agree on all of it.
  std::vector<unsigned char> buf(kShardHeaderBytes + 65536);
  uint64_t h = 0xcbf29ce484222325ull;
  h = fnv1a(buf.data(), std::fread(buf.data(), 1, buf.size(), f.get()), h);
  if (id.size > buf.size() && std::fseek(f.get(), -65536, SEEK_END) == 0)
    h = fnv1a(buf.data(), std::fread(buf.data(), 1, 65536, f.get()), h);
  id.hash = h;
  return id;
}

namespace {

template <class Token>
void write_shard(const std::string& path, const std::vector<Token>& tokens) {
  if (tokens.size() > size_t(INT32_MAX))
    throw UserError(path, std::to_string(tokens.size()), "too many tokens for one shard (int32 count)",
                    "split the data into several shards");
  File f(std::fopen(path.c_str(), "wb"));
  if (!f)
    throw UserError(path, "", std::string("cannot create token shard: ") + std::strerror(errno),
                    "check that the output directory exists and is writable");
  int32_t header[kShardHeaderInts] = {};
  header[0] = sizeof(Token) == 2 ? kShardMagic : kShardMagic32;
  header[1] = sizeof(Token) == 2 ? kShardVersion : kShardVersion32;
  header[2] = int32_t(tokens.size());
  bool ok = std::fwrite(header, sizeof(int32_t), kShardHeaderInts, f.get()) == size_t(kShardHeaderInts);
  ok = ok && (tokens.empty() || std::fwrite(tokens.data(), sizeof(Token), tokens.size(), f.get()) == tokens.size());
  ok = (std::fclose(f.release()) == 0) && ok;
  if (!ok)
    throw UserError(path, "", std::string("write failed: ") + std::strerror(errno), "check free disk space");
}

}  // namespace

void write_token_shard(const std::string& path, const std::vector<uint16_t>& tokens) { write_shard(path, tokens); }
void write_token_shard(const std::string& path, const std::vector<uint32_t>& tokens) { write_shard(path, tokens); }

}  // namespace zt
