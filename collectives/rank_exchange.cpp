// RankExchange: word all-gathers in place over one buffer (host or the staging backend's).
#include "collectives/rank_exchange.h"

#include <algorithm>
#include <cstring>

namespace zt {

RankExchange::~RankExchange() {
  if (buf_) staging_->free(buf_);
}

std::vector<int64_t> RankExchange::all_gather_words(const std::vector<int64_t>& mine) {
  const size_t n = mine.size(), W = size_t(world_size()), bytes = n * W * sizeof(int64_t);
  if (W == 1 || n == 0) return mine;
  std::vector<int64_t> all(n * W);
  const size_t own = size_t(rank()) * n * sizeof(int64_t);
  if (!staging_) {
    std::memcpy(reinterpret_cast<char*>(all.data()) + own, mine.data(), n * sizeof(int64_t));
    comm_.all_gather(reinterpret_cast<char*>(all.data()) + own, all.data(), n * W, DType::I64);
    return all;
  }
  if (bytes > capacity_) {
    if (buf_) staging_->free(buf_);
    buf_ = nullptr;
    buf_ = staging_->alloc(bytes);
    capacity_ = bytes;
  }
  char* slot = static_cast<char*>(buf_) + own;
  staging_->copy_to_device(slot, mine.data(), n * sizeof(int64_t));
  comm_.all_gather(slot, buf_, n * W, DType::I64);
  staging_->copy_to_host(all.data(), buf_, bytes);
  return all;
}

std::vector<std::string> RankExchange::all_gather(const std::string& mine) {
  const int W = world_size();
  if (W == 1) return {mine};
  const std::vector<int64_t> lengths = all_gather_words({int64_t(mine.size())});
  const size_t longest = size_t(*std::max_element(lengths.begin(), lengths.end()));
  const size_t words = std::max<size_t>(1, (longest + 7) / 8);
  std::vector<int64_t> packed(words, 0);
  std::memcpy(packed.data(), mine.data(), mine.size());
  const std::vector<int64_t> all = all_gather_words(packed);
  std::vector<std::string> texts;
  texts.reserve(size_t(W));
  for (int r = 0; r < W; ++r)
    texts.emplace_back(reinterpret_cast<const char*>(all.data() + size_t(r) * words), size_t(lengths[size_t(r)]));
  return texts;
}

bool RankExchange::all_true(bool mine) {
  for (int64_t w : all_gather_words({mine ? 1 : 0}))
    if (w != 1) return false;
  return true;
}

}  // namespace zt
