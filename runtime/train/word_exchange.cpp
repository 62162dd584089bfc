// WordExchange: the buffer is grown on demand and freed with the object.
#include "runtime/train/word_exchange.h"

#include <algorithm>
#include <cstring>

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

// The lengths first, then every text padded to the longest, as words.
std::vector<std::string> WordExchange::all_gather_text(const std::string& mine) {
  const int W = comm_.world_size();
  if (W == 1) return {mine};
  const std::vector<int64_t> lengths = all_gather({int64_t(mine.size())});
  const size_t longest = size_t(*std::max_element(lengths.begin(), lengths.end()));
  const size_t words = std::max<size_t>(1, (longest + 7) / 8);
  std::vector<int64_t> packed(words, 0);
  std::memcpy(packed.data(), mine.data(), mine.size());
  const std::vector<int64_t> all = all_gather(packed);
  std::vector<std::string> texts;
  for (int r = 0; r < W; ++r)
    texts.emplace_back(reinterpret_cast<const char*>(all.data() + size_t(r) * words), size_t(lengths[size_t(r)]));
  return texts;
}

}  // namespace zt
