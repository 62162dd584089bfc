// cut_buckets and split_by_owner on their own, as a table of (unit sizes, stream order, world,
// bucket size): the tiny GPT-2's padded units at several world sizes in backward order (the
// gradient stream) and forward order (the parameter stream), and hand-made sizes — units of 0
// elements, of 1, exact multiples of the bucket — against bucket sizes 1, 2, 3, 7, one unit, the
// whole stream ± 1 and far larger. The expected cut is computed element by element here (element s
// of the stream goes to bucket s / N), and checked against the result piece for piece.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/zero/buckets.h"
#include "tests/zero/zero_test_layouts.h"

namespace zt::test {
namespace {

struct Stream {
  std::string name;
  std::vector<int64_t> len;  // per unit
  std::vector<int> order;    // stream order
  std::vector<int64_t> shard;  // per unit: elements each rank owns (len / world)
  int world = 1;
};

std::vector<int> backward(int U) {
  std::vector<int> o;
  for (int u = U - 1; u >= 0; --u) o.push_back(u);
  return o;
}
std::vector<int> forward(int U) {
  std::vector<int> o(static_cast<size_t>(U));
  std::iota(o.begin(), o.end(), 0);
  return o;
}

// Padded units as the GradReducer streams them: padded to W × alignment, shard = padded / W.
Stream padded_stream(const std::string& name, const std::vector<UnitSpec>& units, int W, int64_t a, bool bwd) {
  Stream s;
  s.name = name + " W" + std::to_string(W) + " align" + std::to_string(a) + (bwd ? " backward" : " forward");
  s.world = W;
  for (const UnitSpec& u : units) {
    s.len.push_back(padded_len(u.numel, W, a));
    s.shard.push_back(s.len.back() / W);
  }
  s.order = bwd ? backward(int(units.size())) : forward(int(units.size()));
  return s;
}

// Raw sizes (no padding), one "rank" owning `shard` elements of each unit.
Stream raw_stream(const std::string& name, std::vector<int64_t> len, std::vector<int> order, int64_t shard) {
  Stream s;
  s.name = name;
  s.len = std::move(len);
  s.order = std::move(order);
  for (int64_t n : s.len) {
    s.shard.push_back(shard);
    s.world = std::max<int>(s.world, int((n + shard - 1) / shard));
  }
  return s;
}

std::vector<Stream> streams() {
  std::vector<Stream> out;
  for (int W : {1, 2, 3, 8})
    for (bool bwd : {true, false}) {
      out.push_back(padded_stream("gpt2_tiny_tied", gpt2_units(true), W, 16, bwd));
      out.push_back(padded_stream("odd", odd_units(), W, 1, bwd));
    }
  out.push_back(padded_stream("primes", prime_units(), 3, 4, true));
  out.push_back(raw_stream("zeros_between", {0, 3, 0, 0, 8, 0}, {0, 1, 2, 3, 4, 5}, 2));
  out.push_back(raw_stream("zeros_backward", {0, 3, 0, 0, 8, 0}, backward(6), 3));
  out.push_back(raw_stream("all_zero", {0, 0, 0}, {2, 1, 0}, 1));
  out.push_back(raw_stream("no_units", {}, {}, 1));
  out.push_back(raw_stream("ones", {1, 1, 1, 1}, {3, 1, 0, 2}, 1));  // any order, not just fwd/bwd
  out.push_back(raw_stream("multiples_of_8", {16, 8, 24}, {0, 1, 2}, 8));
  out.push_back(raw_stream("single", {5}, {0}, 5));
  return out;
}

int64_t total(const Stream& s) {
  int64_t t = 0;
  for (int u : s.order) t += s.len[size_t(u)];
  return t;
}

std::vector<int64_t> bucket_sizes(const Stream& s) {
  const int64_t T = total(s);
  int64_t largest = 0;
  for (int64_t n : s.len) largest = std::max(largest, n);
  std::vector<int64_t> b = {1, 2, 3, 7, 8, 16};
  for (int64_t x : {largest, largest + 1, T - 1, T, T + 1, T * 2 + 5, int64_t(1) << 40})
    if (x >= 1) b.push_back(x);
  return b;
}

// The reference: element s of the stream belongs to bucket s / N; a piece is a maximal run of one
// bucket's elements within one unit.
std::vector<Bucket> reference_cut(const Stream& s, int64_t N) {
  std::vector<Bucket> out;
  int64_t at = 0;
  for (int pos = 0; pos < int(s.order.size()); ++pos) {
    const int u = s.order[size_t(pos)];
    for (int64_t i = 0; i < s.len[size_t(u)]; ++i, ++at) {
      const size_t k = size_t(at / N);
      if (out.size() <= k) out.resize(k + 1);
      Bucket& b = out[k];
      if (b.pieces.empty() || b.pieces.back().unit != u || b.pieces.back().begin + b.pieces.back().n != i)
        b.pieces.push_back({u, i, 0});
      ++b.pieces.back().n;
      b.last_pos = pos;
    }
  }
  return out;
}

std::string str(const Bucket& b) {
  std::ostringstream o;
  o << "{last_pos " << b.last_pos << ":";
  for (const BucketPiece& p : b.pieces) o << " (u" << p.unit << " " << p.begin << "+" << p.n << ")";
  return o.str() + "}";
}

TEST(BucketsTable, CutsTheStreamIntoBucketsOfExactlyN) {
  int rows = 0, spanning_units = 0, spanning_buckets = 0;
  for (const Stream& s : streams()) {
    const int64_t T = total(s);
    for (int64_t N : bucket_sizes(s)) {
      ++rows;
      SCOPED_TRACE(s.name + " N=" + std::to_string(N) + " T=" + std::to_string(T));
      const std::vector<Bucket> got = cut_buckets(s.order, s.len, N);
      // Count: ⌈T / N⌉ (none for an empty stream).
      ASSERT_EQ(int64_t(got.size()), (T + N - 1) / N);
      // Sizes: exactly N except the last, which holds the rest.
      for (size_t k = 0; k < got.size(); ++k) {
        int64_t n = 0;
        for (const BucketPiece& p : got[k].pieces) n += p.n;
        EXPECT_EQ(n, k + 1 < got.size() ? N : T - N * int64_t(got.size() - 1)) << "bucket " << k;
      }
      // The pieces, concatenated, are the stream in order: no gap, no overlap, no empty piece, and
      // within a bucket each piece but the first starts its unit and each but the last ends it.
      int pos = 0;
      int64_t at = 0;
      std::vector<int> buckets_of_unit(s.len.size(), 0);
      for (size_t k = 0; k < got.size(); ++k) {
        const auto& pieces = got[k].pieces;
        ASSERT_FALSE(pieces.empty()) << "bucket " << k;
        if (pieces.size() > 1) ++spanning_units;
        for (size_t j = 0; j < pieces.size(); ++j) {
          while (pos < int(s.order.size()) && at == s.len[size_t(s.order[size_t(pos)])]) ++pos, at = 0;
          ASSERT_LT(pos, int(s.order.size())) << "bucket " << k << " piece " << j << " runs past the stream";
          const BucketPiece& p = pieces[j];
          EXPECT_EQ(p.unit, s.order[size_t(pos)]) << "bucket " << k << " piece " << j;
          EXPECT_EQ(p.begin, at) << "bucket " << k << " piece " << j;
          EXPECT_GT(p.n, 0) << "bucket " << k << " piece " << j;
          EXPECT_LE(p.begin + p.n, s.len[size_t(p.unit)]) << "bucket " << k << " piece " << j;
          if (j > 0) {
            EXPECT_EQ(p.begin, 0) << "bucket " << k << " piece " << j;
          }
          if (j + 1 < pieces.size()) {
            EXPECT_EQ(p.begin + p.n, s.len[size_t(p.unit)]) << "bucket " << k << " piece " << j;
          }
          ++buckets_of_unit[size_t(p.unit)];
          at += p.n;
        }
        // last_pos: the stream position of the last unit the bucket touches.
        EXPECT_EQ(got[k].last_pos, pos) << "bucket " << k;
        if (k > 0) {
          EXPECT_GE(got[k].last_pos, got[k - 1].last_pos);
        }
      }
      while (pos < int(s.order.size()) && at == s.len[size_t(s.order[size_t(pos)])]) ++pos, at = 0;
      EXPECT_EQ(pos, int(s.order.size())) << "the pieces end before the stream does";
      for (size_t u = 0; u < s.len.size(); ++u) {
        if (buckets_of_unit[u] > 1) ++spanning_buckets;
        if (s.len[u] == 0) {
          EXPECT_EQ(buckets_of_unit[u], 0) << "an empty unit has no piece";
        }
      }
      // And piece for piece the element-wise reference.
      const std::vector<Bucket> want = reference_cut(s, N);
      ASSERT_EQ(got.size(), want.size());
      for (size_t k = 0; k < got.size(); ++k) {
        bool same = got[k].last_pos == want[k].last_pos && got[k].pieces.size() == want[k].pieces.size();
        for (size_t j = 0; same && j < got[k].pieces.size(); ++j)
          same = got[k].pieces[j].unit == want[k].pieces[j].unit && got[k].pieces[j].begin == want[k].pieces[j].begin &&
                 got[k].pieces[j].n == want[k].pieces[j].n;
        EXPECT_TRUE(same) << "bucket " << k << ": got " << str(got[k]) << ", want " << str(want[k]);
      }
      if (::testing::Test::HasFailure()) return;
    }
  }
  // The table exercises both directions of the cut: buckets across units, units across buckets.
  EXPECT_GT(spanning_units, 0);
  EXPECT_GT(spanning_buckets, 0);
  EXPECT_GE(rows, 300);
  RecordProperty("rows", rows);
}

// Rows written out by hand, where the numbers are easy to read.
TEST(BucketsTable, HandWorkedCuts) {
  // Units 3, 0, 5 in order, N = 4: [u0 0+3, u2 0+1] [u2 1+4]; the empty unit has no piece.
  auto b = cut_buckets({0, 1, 2}, {3, 0, 5}, 4);
  ASSERT_EQ(b.size(), 2u);
  ASSERT_EQ(b[0].pieces.size(), 2u);
  EXPECT_EQ(b[0].pieces[0].unit, 0);
  EXPECT_EQ(b[0].pieces[0].n, 3);
  EXPECT_EQ(b[0].pieces[1].unit, 2);
  EXPECT_EQ(b[0].pieces[1].n, 1);
  EXPECT_EQ(b[0].last_pos, 2);
  ASSERT_EQ(b[1].pieces.size(), 1u);
  EXPECT_EQ(b[1].pieces[0].begin, 1);
  EXPECT_EQ(b[1].pieces[0].n, 4);
  EXPECT_EQ(b[1].last_pos, 2);
  // Bucket size 1: one bucket per element.
  b = cut_buckets({1, 0}, {2, 3}, 1);
  ASSERT_EQ(b.size(), 5u);
  for (size_t k = 0; k < 5; ++k) {
    ASSERT_EQ(b[k].pieces.size(), 1u);
    EXPECT_EQ(b[k].pieces[0].unit, k < 3 ? 1 : 0);
    EXPECT_EQ(b[k].pieces[0].begin, int64_t(k < 3 ? k : k - 3));
    EXPECT_EQ(b[k].pieces[0].n, 1);
    EXPECT_EQ(b[k].last_pos, k < 3 ? 0 : 1);
  }
  // Larger than everything: one bucket holding every unit whole.
  b = cut_buckets({2, 1, 0}, {4, 5, 6}, 1000);
  ASSERT_EQ(b.size(), 1u);
  ASSERT_EQ(b[0].pieces.size(), 3u);
  EXPECT_EQ(b[0].pieces[0].unit, 2);
  EXPECT_EQ(b[0].pieces[2].n, 4);
  EXPECT_EQ(b[0].last_pos, 2);
  // Trailing empty units do not move the last position.
  b = cut_buckets({0, 1}, {4, 0}, 4);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].last_pos, 0);
}

TEST(BucketsTable, RejectsBucketSizesBelowOne) {
  EXPECT_THROW(cut_buckets({0}, {4}, 0), std::invalid_argument);
  EXPECT_THROW(cut_buckets({0}, {4}, -3), std::invalid_argument);
}

// Every piece of every cut above, split at the rank-shard boundaries: the parts cover the piece in
// order, each lies inside one rank's shard [owner·shard, (owner+1)·shard), and the owner of every
// element is element / shard — for padded layouts, the rank whose ShardMap range holds it.
TEST(BucketsTable, SplitByOwnerCutsAtShardBoundaries) {
  int pieces = 0, multi_owner = 0;
  for (const Stream& s : streams()) {
    for (int64_t N : bucket_sizes(s)) {
      SCOPED_TRACE(s.name + " N=" + std::to_string(N));
      for (const Bucket& b : cut_buckets(s.order, s.len, N)) {
        for (const BucketPiece& piece : b.pieces) {
          const int64_t shard = s.shard[size_t(piece.unit)];
          const std::vector<OwnedPart> parts = split_by_owner(piece, shard);
          ++pieces;
          if (parts.size() > 1) ++multi_owner;
          ASSERT_FALSE(parts.empty());
          // Expected parts, element by element.
          std::vector<OwnedPart> want;
          for (int64_t e = piece.begin; e < piece.begin + piece.n; ++e) {
            const int owner = int(e / shard);
            if (want.empty() || want.back().owner != owner) want.push_back({owner, e, 0});
            ++want.back().n;
          }
          ASSERT_EQ(parts.size(), want.size()) << "piece u" << piece.unit << " " << piece.begin << "+" << piece.n;
          int64_t at = piece.begin;
          for (size_t j = 0; j < parts.size(); ++j) {
            const OwnedPart& p = parts[j];
            EXPECT_EQ(p.owner, want[j].owner) << "part " << j;
            EXPECT_EQ(p.begin, want[j].begin) << "part " << j;
            EXPECT_EQ(p.n, want[j].n) << "part " << j;
            EXPECT_EQ(p.begin, at) << "part " << j << ": gap or overlap";
            EXPECT_GT(p.n, 0);
            EXPECT_GE(p.begin, int64_t(p.owner) * shard);
            EXPECT_LE(p.begin + p.n, int64_t(p.owner + 1) * shard);
            EXPECT_GE(p.owner, 0);
            EXPECT_LT(p.owner, s.world);
            if (j > 0) {
              EXPECT_EQ(p.begin % shard, 0) << "an inner cut is a shard boundary";
            }
            at += p.n;
          }
          EXPECT_EQ(at, piece.begin + piece.n);
          if (::testing::Test::HasFailure()) return;
        }
      }
    }
  }
  EXPECT_GT(multi_owner, 0);
  EXPECT_GT(pieces, 1000);
  RecordProperty("pieces", pieces);
}

// For the padded layouts the owner agrees with the ShardMap: the part lies in the owner's range.
TEST(BucketsTable, OwnersAgreeWithTheShardMap) {
  for (int W : {1, 2, 3, 5, 8}) {
    const std::vector<UnitSpec> units = gpt2_units(false);
    std::vector<ShardMap> maps;
    for (int r = 0; r < W; ++r) maps.emplace_back(units, W, r, 16);
    std::vector<int64_t> len;
    for (int u = 0; u < maps[0].units(); ++u) len.push_back(maps[0].shard(u).padded);
    for (int64_t N : {int64_t(7), int64_t(333), int64_t(1) << 30}) {
      SCOPED_TRACE("W" + std::to_string(W) + " N" + std::to_string(N));
      for (const Bucket& b : cut_buckets(backward(int(len.size())), len, N))
        for (const BucketPiece& piece : b.pieces)
          for (const OwnedPart& p : split_by_owner(piece, maps[0].shard(piece.unit).shard)) {
            ASSERT_LT(p.owner, W);
            const UnitShard& sh = maps[size_t(p.owner)].shard(piece.unit);
            EXPECT_GE(p.begin, sh.rank_begin);
            EXPECT_LE(p.begin + p.n, sh.rank_begin + sh.shard);
          }
    }
  }
}

TEST(BucketsTable, EmptyPieceHasNoParts) { EXPECT_TRUE(split_by_owner({0, 5, 0}, 4).empty()); }

// cut_balanced_buckets (qgZ): every bucket holds the same elements of every shard, the pieces
// cover each unit exactly once, buckets close at bucket_elems / ranks shard elements.
TEST(BucketsTable, BalancedBucketsHoldEqualPartsOfEveryShard) {
  const int W = 4;
  const std::vector<int> order = {2, 1, 0};
  const std::vector<int64_t> len = {64, 24, 40};  // shards of 16, 6, 10
  for (int64_t B : {int64_t(1), int64_t(4), int64_t(13), int64_t(40), int64_t(1000)}) {
    SCOPED_TRACE("bucket " + std::to_string(B));
    const std::vector<Bucket> bs = cut_balanced_buckets(order, len, B, W);
    std::vector<std::vector<int>> hits(3);
    for (size_t u = 0; u < 3; ++u) hits[u].assign(size_t(len[u]), 0);
    for (const Bucket& b : bs) {
      std::vector<int64_t> owned(W, 0);
      int64_t shard_elems = 0;
      for (const BucketPiece& p : b.pieces) {
        for (const OwnedPart& part : split_by_owner(p, len[size_t(p.unit)] / W)) owned[size_t(part.owner)] += part.n;
        for (int64_t i = p.begin; i < p.begin + p.n; ++i) ++hits[size_t(p.unit)][size_t(i)];
      }
      for (int r = 1; r < W; ++r) EXPECT_EQ(owned[size_t(r)], owned[0]) << "every owner holds the same part";
      shard_elems = owned[0];
      EXPECT_LE(shard_elems, std::max<int64_t>(1, B / W));
    }
    for (size_t u = 0; u < 3; ++u)
      for (int h : hits[u]) ASSERT_EQ(h, 1) << "unit " << u << ": every element in exactly one bucket";
    EXPECT_EQ(bs.back().last_pos, 2);
  }
  EXPECT_THROW(cut_balanced_buckets(order, {64, 25, 40}, 8, W), std::invalid_argument);  // 25 is not 4 shards
  const BucketStream plain(order, len, 13), balanced(order, len, 13, W), one(order, len, 13, 1);
  EXPECT_NE(plain.buckets().size(), balanced.buckets().size());
  EXPECT_EQ(one.buckets().size(), plain.buckets().size()) << "one rank: the plain cut";
}

// split_bucket (qgZ's exact 1-D tensors): pieces cut at the ranges, both halves in stream order,
// every element in exactly one of them, ranges outside the bucket ignored.
TEST(BucketsTable, SplitBucketCutsPiecesAtTheRanges) {
  Bucket b;
  b.pieces = {{1, 10, 30}, {0, 0, 8}};  // unit 1 [10, 40), then unit 0 [0, 8)
  b.last_pos = 1;
  const std::vector<std::vector<BucketPiece>> ranges = {{{0, 0, 2}, {0, 6, 10}},           // unit 0: [0,2) and [6,16)
                                                        {{1, 0, 12}, {1, 20, 5}, {1, 39, 9}}};  // unit 1
  const BucketSplit s = split_bucket(b, ranges);
  auto same = [](const std::vector<BucketPiece>& got, const std::vector<BucketPiece>& want) {
    if (got.size() != want.size()) return false;
    for (size_t i = 0; i < got.size(); ++i)
      if (got[i].unit != want[i].unit || got[i].begin != want[i].begin || got[i].n != want[i].n) return false;
    return true;
  };
  EXPECT_TRUE(same(s.inside.pieces, {{1, 10, 2}, {1, 20, 5}, {1, 39, 1}, {0, 0, 2}, {0, 6, 2}}));
  EXPECT_TRUE(same(s.outside.pieces, {{1, 12, 8}, {1, 25, 14}, {0, 2, 4}}));
  EXPECT_EQ(s.inside.last_pos, 1);
  EXPECT_EQ(s.outside.last_pos, 1);
  const BucketSplit none = split_bucket(b, {{}, {}});
  EXPECT_TRUE(none.inside.pieces.empty());
  EXPECT_TRUE(same(none.outside.pieces, b.pieces));
}

}  // namespace
}  // namespace zt::test
