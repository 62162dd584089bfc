// MappedShard: one .bin token shard memory-mapped read-only, its header checked; tokens are read in
// place (never copied whole), so a process's resident memory grows with what it reads until it
// releases the pages.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace zt {

class MappedShard {
 public:
  // Maps `path`. Throws zt::UserError naming the file for anything check_shard_header refuses and
  // for a file that cannot be opened or mapped.
  static std::shared_ptr<const MappedShard> open(const std::string& path);
  ~MappedShard();
  MappedShard(const MappedShard&) = delete;
  MappedShard& operator=(const MappedShard&) = delete;

  const std::string& path() const { return path_; }
  int token_bytes() const { return token_bytes_; }
  int64_t size() const { return count_; }
  const unsigned char* tokens() const { return base_ + header_bytes_; }
  // Tells the kernel this process no longer needs the pages holding tokens [first, first + n)
  // resident (the page cache keeps them; a later read maps them again): reads then leave the
  // resident set as it was, however much of the corpus they cover.
  void release(int64_t first, int64_t n) const;

 private:
  MappedShard() = default;
  std::string path_;
  const unsigned char* base_ = nullptr;
  size_t bytes_ = 0, header_bytes_ = 0;
  int token_bytes_ = 2;
  int64_t count_ = 0;
};

}  // namespace zt
