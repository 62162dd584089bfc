// MappedShard: open, check the header through the mapping, map read-only with random access advice.
#include "runtime/data/mapped_shard.h"

#include <cerrno>
#include <algorithm>
#include <cstring>

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/common/diagnostics.h"
#include "runtime/data/token_shard.h"

namespace zt {

std::shared_ptr<const MappedShard> MappedShard::open(const std::string& path) {
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
  std::shared_ptr<MappedShard> s(new MappedShard);
  s->path_ = path;
  s->token_bytes_ = h.token_bytes;
  s->count_ = h.count;
  s->header_bytes_ = kShardHeaderBytes;
  s->bytes_ = size;
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);  // the mapping outlives the descriptor
  if (p == MAP_FAILED)
    throw UserError(path, std::to_string(size) + " bytes", std::string("cannot memory-map the token shard: ") +
                                                               std::strerror(errno),
                    "check the address-space limit (ulimit -v) and that the file system supports mmap");
  ::madvise(p, size, MADV_RANDOM);  // windows are read in a shuffled order: no read-ahead
  s->base_ = static_cast<const unsigned char*>(p);
  return s;
}

MappedShard::~MappedShard() {
  if (base_) ::munmap(const_cast<unsigned char*>(base_), bytes_);
}

void MappedShard::release(int64_t first, int64_t n) const {
  const size_t page = size_t(::sysconf(_SC_PAGESIZE));
  size_t begin = header_bytes_ + size_t(first) * size_t(token_bytes_);
  size_t end = std::min(bytes_, begin + size_t(n) * size_t(token_bytes_));
  begin = begin / page * page;  // every page the range touches: a neighbour's page is read again on demand
  end = (end + page - 1) / page * page;
  if (end > begin) ::madvise(const_cast<unsigned char*>(base_) + begin, end - begin, MADV_DONTNEED);
}

}  // namespace zt
