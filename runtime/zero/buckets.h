// Buckets: a flat stream of unit buffers (in the order backward produces gradients, or the order
// updates finish) cut into buckets of a fixed number of elements — DeepSpeed's reduce_bucket_size
// and allgather_bucket_size — and each bucket's pieces split by the rank that owns them: the
// segments one bucketed collective takes.
//
// A bucket is exactly `bucket_elems` consecutive elements of the stream (the last one shorter), so
// a bucket may span units and a unit may span buckets; padding elements are part of the stream.
// (DeepSpeed closes a bucket before a parameter that would overflow it, so its buckets never cut a
// tensor; ours may, which is what makes a 1-element bucket meaningful. Sums are element-wise, so
// the cut never changes a result.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace zt {

// Elements [begin, begin + n) of unit `unit`'s padded flat buffer.
struct BucketPiece {
  int unit = 0;
  int64_t begin = 0, n = 0;
};

struct Bucket {
  std::vector<BucketPiece> pieces;  // in stream order
  int last_pos = 0;                 // stream position of the last unit the bucket touches
};

// order: the units in stream order; len[u]: elements unit u contributes (its padded length).
// bucket_elems >= 1.
std::vector<Bucket> cut_buckets(const std::vector<int>& order, const std::vector<int64_t>& len, int64_t bucket_elems);
// The same stream cut so that every bucket holds the same elements of each of `ranks` shards (each
// unit's len[u] split into `ranks` equal shards, len[u] a multiple of it): the stream of shard-
// relative positions is cut every max(1, bucket_elems / ranks) elements, and each cut piece becomes
// one piece per shard, in shard order. qgZ sends every owner's part in a record of one size, so a
// bucket whose owners held unequal parts would pad the smaller ones (up to ranks times the data).
std::vector<Bucket> cut_balanced_buckets(const std::vector<int>& order, const std::vector<int64_t>& len,
                                         int64_t bucket_elems, int ranks);

// A piece's parts by owning rank when each rank owns `shard` consecutive elements of the unit:
// (owner, begin, n) in element order.
struct OwnedPart {
  int owner = 0;
  int64_t begin = 0, n = 0;
};
std::vector<OwnedPart> split_by_owner(const BucketPiece& piece, int64_t shard);

// A bucket's pieces cut by element ranges of their units: the parts inside ranges[u] (sorted,
// disjoint pieces of unit u) go to `inside`, the rest to `outside`, each in stream order — qgZ
// sends the 1-D tensors of a bucket exactly and quantizes the rest.
struct BucketSplit {
  Bucket inside, outside;
};
BucketSplit split_bucket(const Bucket& b, const std::vector<std::vector<BucketPiece>>& ranges);

// The buckets of one stream and the cursor of the next one to issue: once the unit at stream
// position `done_pos` is done, every bucket whose last unit is at or before it is ready, in order.
// Both sides of ZeRO walk their stream this way (gradients in backward order, updated parameters in
// update order).
class BucketStream {
 public:
  BucketStream() = default;
  // balanced_ranks > 1: cut_balanced_buckets over that many shards; else cut_buckets.
  BucketStream(const std::vector<int>& order, const std::vector<int64_t>& len, int64_t bucket_elems,
               int balanced_ranks = 0)
      : buckets_(balanced_ranks > 1 ? cut_balanced_buckets(order, len, bucket_elems, balanced_ranks)
                                    : cut_buckets(order, len, bucket_elems)) {}
  const std::vector<Bucket>& buckets() const { return buckets_; }
  // Calls issue(k) for each bucket k not yet issued that is complete through done_pos, in order.
  template <class Issue>
  void issue_ready(int done_pos, Issue&& issue) {
    while (next_ < buckets_.size() && buckets_[next_].last_pos <= done_pos) issue(next_++);
  }
  size_t unissued() const { return buckets_.size() - next_; }
  void rewind() { next_ = 0; }  // a new pass over the stream

 private:
  std::vector<Bucket> buckets_;
  size_t next_ = 0;
};

}  // namespace zt
