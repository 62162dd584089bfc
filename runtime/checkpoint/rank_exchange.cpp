// RankExchange: two all-gathers per record set (lengths, then the padded bytes).
#include "runtime/checkpoint/rank_exchange.h"

#include <algorithm>
#include <cstring>

namespace zt::ckpt {

void RankExchange::gather_i64(std::vector<int64_t>& buf) {
  const size_t n = buf.size(), slice = n / size_t(world_size());
  if (world_size() == 1) return;
  if (!staging_) {
    comm_.all_gather(buf.data() + slice * size_t(rank()), buf.data(), n, DType::I64);
    return;
  }
  void* d = staging_->alloc(n * 8);
  staging_->copy_to_device(d, buf.data(), n * 8);
  comm_.all_gather(static_cast<char*>(d) + slice * size_t(rank()) * 8, d, n, DType::I64);
  staging_->copy_to_host(buf.data(), d, n * 8);
  staging_->free(d);
}

std::vector<std::string> RankExchange::all_gather(const std::string& mine) {
  const size_t W = size_t(world_size());
  std::vector<int64_t> lens(W, 0);
  lens[size_t(rank())] = int64_t(mine.size());
  gather_i64(lens);
  const size_t words = (size_t(*std::max_element(lens.begin(), lens.end())) + 7) / 8;
  std::vector<int64_t> data(std::max<size_t>(words, 1) * W, 0);
  std::memcpy(data.data() + std::max<size_t>(words, 1) * size_t(rank()), mine.data(), mine.size());
  gather_i64(data);
  std::vector<std::string> out(W);
  for (size_t r = 0; r < W; ++r)
    out[r].assign(reinterpret_cast<const char*>(data.data() + std::max<size_t>(words, 1) * r), size_t(lens[r]));
  return out;
}

bool RankExchange::all_true(bool mine) {
  for (const auto& s : all_gather(mine ? "1" : "0"))
    if (s != "1") return false;
  return true;
}

}  // namespace zt::ckpt
