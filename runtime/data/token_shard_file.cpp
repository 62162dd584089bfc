// TokenShardFile: open, check the header, keep the descriptor; a read is one pread into the caller's
// int32 buffer, widened in place from the end when the shard holds uint16 tokens.
#include "runtime/data/token_shard_file.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/common/diagnostics.h"
#include "runtime/data/token_shard.h"

namespace zt {

std::shared_ptr<const TokenShardFile> TokenShardFile::open(const std::string& path) {
  const File f = open_regular_file(path, "token shard",
                                   "check the path, or make shards with scripts/prepare_data.py or `zerotrain prepare`");
  const int fd = fileno(f.get());
  struct stat st{};
  if (fstat(fd, &st) != 0)
    throw UserError(path, "", std::string("cannot stat the token shard: ") + std::strerror(errno), "use a regular file");
  const size_t size = size_t(st.st_size);
  int32_t header[kShardHeaderInts] = {};
  if (size >= kShardHeaderBytes && ::pread(fd, header, kShardHeaderBytes, 0) != ssize_t(kShardHeaderBytes))
    throw UserError(path + ":byte 0", "", std::string("cannot read the header: ") + std::strerror(errno),
                    "check the file's permissions");
  const ShardHeader h = check_shard_header(path, header, size);
  std::shared_ptr<TokenShardFile> s(new TokenShardFile);
  s->path_ = path;
  s->token_bytes_ = h.token_bytes;
  s->count_ = h.count;
  s->fd_ = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);  // the stream closes its own descriptor
  if (s->fd_ < 0)
    throw UserError(path, "", std::string("cannot keep the token shard open: ") + std::strerror(errno),
                    "raise the open-file limit (ulimit -n) above the number of shards");
  ::posix_fadvise(s->fd_, 0, 0, POSIX_FADV_RANDOM);  // windows are read in a shuffled order: no read-ahead
  return s;
}

TokenShardFile::~TokenShardFile() {
  if (fd_ >= 0) ::close(fd_);
}

void TokenShardFile::read(int64_t first, int64_t n, int32_t* out) const {
  const size_t bytes = size_t(n) * size_t(token_bytes_);
  const off_t offset = off_t(kShardHeaderBytes + size_t(first) * size_t(token_bytes_));
  char* dst = reinterpret_cast<char*>(out);
  for (size_t done = 0; done < bytes;) {
    const ssize_t got = ::pread(fd_, dst + done, bytes - done, offset + off_t(done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0)
      throw UserError(path_ + ":byte " + std::to_string(offset + off_t(done)), "",
                      got < 0 ? std::string("cannot read the token shard: ") + std::strerror(errno)
                              : "short read: the shard changed while it was read",
                      "do not rewrite shards during a run");
    done += size_t(got);
  }
  if (token_bytes_ == 2) {  // widen in place, last first: element i's 2 bytes lie below its 4
    const auto* narrow = reinterpret_cast<const uint16_t*>(out);
    for (int64_t i = n - 1; i >= 0; --i) out[i] = int32_t(narrow[i]);
  }
}

}  // namespace zt
