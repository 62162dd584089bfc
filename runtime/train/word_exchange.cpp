// WordExchange: the buffer is grown on demand and freed with the object.
#include "runtime/train/word_exchange.h"

namespace zt {

WordExchange::~WordExchange() {
  if (buf_) backend_.free(buf_);
}

std::vector<int64_t> WordExchange::all_gather(const std::vector<int64_t>& mine) {
  const size_t n = mine.size(), W = size_t(comm_.world_size()), bytes = n * W * sizeof(int64_t);
  if (W == 1 || n == 0) return mine;
  if (bytes > capacity_) {
    if (buf_) backend_.free(buf_);
    buf_ = backend_.alloc(bytes);
    capacity_ = bytes;
  }
  char* own = static_cast<char*>(buf_) + size_t(comm_.rank()) * n * sizeof(int64_t);
  backend_.copy_to_device(own, mine.data(), n * sizeof(int64_t));
  comm_.all_gather(own, buf_, n * W, DType::I64);
  std::vector<int64_t> all(n * W);
  backend_.copy_to_host(all.data(), buf_, bytes);
  return all;
}

}  // namespace zt
