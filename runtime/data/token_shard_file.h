// TokenShardFile: one .bin token shard kept open read-only, its header checked. Tokens are read
// with pread (from the page cache, never mapped into the process): a rank's resident memory holds
// the window it reads and nothing of the corpus, however much of it the run covers.
// (A memory mapping was the first design: releasing each window's pages with madvise cost a TLB
// shootdown to every thread of the OpenMP team, ~15 µs a window, against ~1.5 µs for a pread.)
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace zt {

class TokenShardFile {
 public:
  // Opens `path`. Throws zt::UserError naming the file for anything check_shard_header refuses and
  // for a file that cannot be opened.
  static std::shared_ptr<const TokenShardFile> open(const std::string& path);
  ~TokenShardFile();
  TokenShardFile(const TokenShardFile&) = delete;
  TokenShardFile& operator=(const TokenShardFile&) = delete;

  const std::string& path() const { return path_; }
  int token_bytes() const { return token_bytes_; }
  int64_t size() const { return count_; }
  // Tokens [first, first + n) as int32 into out (n values). Throws zt::UserError naming the file
  // and byte offset on a short read (the file changed under the run) or an I/O error.
  void read(int64_t first, int64_t n, int32_t* out) const;

 private:
  TokenShardFile() = default;
  std::string path_;
  int fd_ = -1;
  int token_bytes_ = 2;
  int64_t count_ = 0;
};

}  // namespace zt
