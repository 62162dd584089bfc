// cut_buckets and split_by_owner: bucket arithmetic, computed once per run.
#include "runtime/zero/buckets.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace zt {

std::vector<Bucket> cut_buckets(const std::vector<int>& order, const std::vector<int64_t>& len, int64_t bucket_elems) {
  if (bucket_elems < 1) throw std::invalid_argument("cut_buckets: bucket size must be >= 1, got " + std::to_string(bucket_elems));
  std::vector<Bucket> out;
  int64_t room = 0;  // elements left in the open bucket
  for (int pos = 0; pos < int(order.size()); ++pos) {
    const int u = order[size_t(pos)];
    for (int64_t at = 0; at < len[size_t(u)];) {
      if (room == 0) {
        out.emplace_back();
        room = bucket_elems;
      }
      const int64_t n = std::min(room, len[size_t(u)] - at);
      out.back().pieces.push_back({u, at, n});
      out.back().last_pos = pos;
      at += n;
      room -= n;
    }
  }
  return out;
}

std::vector<Bucket> cut_balanced_buckets(const std::vector<int>& order, const std::vector<int64_t>& len,
                                         int64_t bucket_elems, int ranks) {
  if (bucket_elems < 1) throw std::invalid_argument("cut_balanced_buckets: bucket size must be >= 1, got " + std::to_string(bucket_elems));
  if (ranks < 1) throw std::invalid_argument("cut_balanced_buckets: ranks must be >= 1, got " + std::to_string(ranks));
  const int64_t per_shard = std::max<int64_t>(1, bucket_elems / ranks);
  std::vector<Bucket> out;
  int64_t room = 0;  // shard-relative elements left in the open bucket
  for (int pos = 0; pos < int(order.size()); ++pos) {
    const int u = order[size_t(pos)];
    if (len[size_t(u)] % ranks != 0)
      throw std::invalid_argument("cut_balanced_buckets: unit " + std::to_string(u) + "'s " + std::to_string(len[size_t(u)]) +
                                  " elements do not split into " + std::to_string(ranks) + " shards");
    const int64_t S = len[size_t(u)] / ranks;
    for (int64_t at = 0; at < S;) {
      if (room == 0) {
        out.emplace_back();
        room = per_shard;
      }
      const int64_t n = std::min(room, S - at);
      for (int r = 0; r < ranks; ++r) out.back().pieces.push_back({u, int64_t(r) * S + at, n});
      out.back().last_pos = pos;
      at += n;
      room -= n;
    }
  }
  return out;
}

std::vector<OwnedPart> split_by_owner(const BucketPiece& piece, int64_t shard) {
  std::vector<OwnedPart> out;
  for (int64_t at = piece.begin, end = piece.begin + piece.n; at < end;) {
    const int owner = int(at / shard);
    const int64_t stop = std::min(end, int64_t(owner + 1) * shard);
    out.push_back({owner, at, stop - at});
    at = stop;
  }
  return out;
}

BucketSplit split_bucket(const Bucket& b, const std::vector<std::vector<BucketPiece>>& ranges) {
  BucketSplit out;
  out.inside.last_pos = out.outside.last_pos = b.last_pos;
  auto add = [](Bucket& to, int u, int64_t begin, int64_t end) {
    if (end > begin) to.pieces.push_back({u, begin, end - begin});
  };
  for (const BucketPiece& p : b.pieces) {
    int64_t at = p.begin;
    const int64_t end = p.begin + p.n;
    for (const BucketPiece& r : ranges[size_t(p.unit)]) {
      const int64_t lo = std::max(at, r.begin), hi = std::min(end, r.begin + r.n);
      if (lo >= hi) continue;
      add(out.outside, p.unit, at, lo);
      add(out.inside, p.unit, lo, hi);
      at = hi;
    }
    add(out.outside, p.unit, at, end);
  }
  return out;
}

}  // namespace zt
