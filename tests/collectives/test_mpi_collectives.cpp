// Multi-rank tests of MpiCommunicator (run by CTest under mpirun with 2, 3 and 4 ranks): every op x
// dtype x sum/avg x in-place/out-of-place against a local reference, ordering, errors, accounting.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "collectives/bootstrap.h"
#include "collectives/comm_common.h"
#include "collectives/factory.h"
#include "collectives/mpi_communicator.h"
#include "tests/collectives/coll_test_data.h"

namespace zt {
namespace {

MpiCommunicator* g_comm = nullptr;  // set by main() for the duration of RUN_ALL_TESTS
const Bootstrap* g_boot = nullptr;
int g_per_node = 0;  // the reference's two-level fold (reference_reduce's per_node); 0: rank order

constexpr DType kTypes[] = {DType::F32, DType::BF16, DType::F16, DType::I64};

std::vector<ReduceOp> reductions_for(DType t) {
  if (t == DType::I64) return {ReduceOp::Sum};
  return {ReduceOp::Sum, ReduceOp::Avg};
}

std::string label(const char* what, DType t, ReduceOp op, bool in_place, size_t count) {
  return std::string(what) + " " + dtype_name(t) + " " + reduce_op_name(op) + (in_place ? " in-place" : " out-of-place") +
         " count=" + std::to_string(count);
}

// Sizes in elements of one shard: 0, 1, odd.
const size_t kShards[] = {0, 1, 3, 1001};

void check_all_reduce(size_t count, DType t, ReduceOp op, bool in_place, uint64_t salt) {
  Communicator& c = *g_comm;
  const size_t es = dtype_size(t);
  std::vector<char> send, recv(count * es, char(0x5a));
  test::fill_input(send, t, 0, count, c.rank(), salt);
  const std::vector<char> original = send;
  if (in_place) {
    c.all_reduce(send.data(), send.data(), count, t, op);
    recv = send;
  } else {
    c.all_reduce(send.data(), recv.data(), count, t, op);
    EXPECT_EQ(send, original) << label("all_reduce send buffer changed:", t, op, in_place, count);
  }
  std::vector<char> ref = test::reference_reduce(t, op, 0, count, c.world_size(), salt, g_per_node);
  EXPECT_TRUE(recv == ref) << label("all_reduce", t, op, in_place, count);
}

void check_reduce_scatter(size_t shard, DType t, ReduceOp op, bool in_place, uint64_t salt) {
  Communicator& c = *g_comm;
  const size_t es = dtype_size(t), count = shard * size_t(c.world_size());
  std::vector<char> send;
  test::fill_input(send, t, 0, count, c.rank(), salt);
  std::vector<char> out(shard * es, char(0x5a));
  if (in_place) {
    char* mine = send.data() + size_t(c.rank()) * shard * es;
    c.reduce_scatter(send.data(), mine, count, t, op);
    if (shard > 0) std::memcpy(out.data(), mine, shard * es);  // size 0: both pointers may be null
  } else {
    c.reduce_scatter(send.data(), out.data(), count, t, op);
  }
  std::vector<char> ref = test::reference_reduce(t, op, size_t(c.rank()) * shard, shard, c.world_size(), salt, g_per_node);
  EXPECT_TRUE(out == ref) << label("reduce_scatter", t, op, in_place, count);
}

void check_all_gather(size_t shard, DType t, bool in_place, uint64_t salt) {
  Communicator& c = *g_comm;
  const size_t es = dtype_size(t), count = shard * size_t(c.world_size());
  std::vector<char> mine, full(count * es, char(0x5a));
  test::fill_input(mine, t, size_t(c.rank()) * shard, shard, c.rank(), salt);
  if (in_place) {
    if (shard) std::memcpy(full.data() + size_t(c.rank()) * shard * es, mine.data(), shard * es);
    c.all_gather(full.data() + size_t(c.rank()) * shard * es, full.data(), count, t);
  } else {
    c.all_gather(mine.data(), full.data(), count, t);
  }
  std::vector<char> ref, piece;
  for (int r = 0; r < c.world_size(); ++r) {
    test::fill_input(piece, t, size_t(r) * shard, shard, r, salt);
    ref.insert(ref.end(), piece.begin(), piece.end());
  }
  EXPECT_TRUE(full == ref) << label("all_gather", t, ReduceOp::Sum, in_place, count);
}

TEST(MpiCollectives, BootstrapMatchesLauncher) {
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  ASSERT_NE(size, nullptr) << "this test must run under Open MPI's mpirun";
  EXPECT_EQ(g_boot->world_size(), std::atoi(size));
  EXPECT_EQ(g_comm->world_size(), std::atoi(size));
  if (local) {
    EXPECT_EQ(g_boot->local_rank(), std::atoi(local));
  }
  EXPECT_EQ(g_boot->node_count(), 1);  // CTest runs every rank on this host
  EXPECT_EQ(g_comm->name(), "mpi");
}

// split(): the node groups (consecutive ranks) and the cross-node groups (one rank of each node)
// of a topology of two ranks per node reduce over their members alone, rank by key, count their own
// bytes, and leave the parent usable.
TEST(MpiCollectives, SplitIntoNodeAndCrossGroups) {
  Communicator& c = *g_comm;
  const int W = c.world_size(), r = c.rank();
  const int n = W % 2 == 0 ? 2 : 1;
  const CommStats parent_before = c.stats();
  auto node = c.split(r / n, r);
  auto cross = c.split(r % n, W - r);  // reversed key: rank order within the group reversed
  ASSERT_EQ(node->world_size(), n);
  EXPECT_EQ(node->rank(), r % n);
  ASSERT_EQ(cross->world_size(), W / n);
  EXPECT_EQ(cross->rank(), W / n - 1 - r / n) << "ranked by key";
  std::vector<int64_t> v = {int64_t(r) + 1, int64_t(r) * int64_t(r)};
  node->all_reduce(v.data(), v.data(), 2, DType::I64, ReduceOp::Sum);
  int64_t s1 = 0, s2 = 0;
  for (int q = r / n * n; q < r / n * n + n; ++q) {
    s1 += q + 1;
    s2 += int64_t(q) * q;
  }
  EXPECT_EQ(v[0], s1);
  EXPECT_EQ(v[1], s2);
  std::vector<int64_t> mine = {int64_t(r)}, all(size_t(W / n));
  cross->all_gather(mine.data(), all.data(), all.size(), DType::I64);
  for (int k = 0; k < W / n; ++k) EXPECT_EQ(all[size_t(k)], int64_t(r % n + (W / n - 1 - k) * n)) << "slot " << k;
  EXPECT_EQ(node->stats()[CommOp::AllReduce].calls, 1u);
  EXPECT_EQ(node->stats()[CommOp::AllReduce].bytes, 16u);
  EXPECT_EQ(cross->stats()[CommOp::AllGather].bytes, uint64_t(8 * (W / n)));
  EXPECT_EQ(c.stats()[CommOp::AllReduce].calls, parent_before[CommOp::AllReduce].calls) << "the parent counts its own";
  int64_t one = 1;
  c.all_reduce(&one, &one, 1, DType::I64, ReduceOp::Sum);
  EXPECT_EQ(one, W);
  EXPECT_THROW(c.split(-1, 0), std::invalid_argument);
}

TEST(MpiCollectives, AllReduceEveryTypeAndSize) {
  const size_t w = size_t(g_comm->world_size());
  uint64_t salt = 100;
  // all_reduce takes any count: 0, 1, W, an odd count not divisible by W, a multi-block count.
  for (size_t count : {size_t(0), size_t(1), w, 7 * w + 1, size_t(5003)})
    for (DType t : kTypes)
      for (ReduceOp op : reductions_for(t))
        for (bool in_place : {false, true}) check_all_reduce(count, t, op, in_place, ++salt);
}

TEST(MpiCollectives, ReduceScatterEveryTypeAndSize) {
  uint64_t salt = 200;
  for (size_t shard : kShards)
    for (DType t : kTypes)
      for (ReduceOp op : reductions_for(t))
        for (bool in_place : {false, true}) check_reduce_scatter(shard, t, op, in_place, ++salt);
}

TEST(MpiCollectives, AllGatherEveryTypeAndSize) {
  uint64_t salt = 300;
  for (size_t shard : kShards)
    for (DType t : kTypes)
      for (bool in_place : {false, true}) check_all_gather(shard, t, in_place, ++salt);
}

// All-to-all: rank r's chunk j (values of position j, seeded by r) lands at chunk r of rank j.
void check_all_to_all(size_t chunk, DType t, uint64_t salt) {
  Communicator& c = *g_comm;
  const int W = c.world_size();
  const size_t es = dtype_size(t), count = chunk * size_t(W);
  std::vector<char> send, piece, recv(count * es, char(0x5a)), ref;
  for (int j = 0; j < W; ++j) {
    test::fill_input(piece, t, size_t(j) * chunk, chunk, c.rank(), salt);
    send.insert(send.end(), piece.begin(), piece.end());
  }
  for (int i = 0; i < W; ++i) {
    test::fill_input(piece, t, size_t(c.rank()) * chunk, chunk, i, salt);
    ref.insert(ref.end(), piece.begin(), piece.end());
  }
  c.reset_stats();
  c.all_to_all(send.data(), recv.data(), count, t);
  EXPECT_TRUE(recv == ref) << label("all_to_all", t, ReduceOp::Sum, false, count);
  EXPECT_EQ(c.stats()[CommOp::AllToAll].calls, 1u);
  EXPECT_EQ(c.stats()[CommOp::AllToAll].bytes, count * es);
}

TEST(MpiCollectives, AllToAllEveryTypeAndSize) {
  uint64_t salt = 350;
  for (size_t chunk : kShards)
    for (DType t : kTypes) check_all_to_all(chunk, t, ++salt);
  Communicator& c = *g_comm;
  const size_t W = size_t(c.world_size());
  std::vector<float> a(4 * W + 1), b(4 * W + 1);
  if (W > 1) EXPECT_THROW(c.all_to_all(a.data(), b.data(), 4 * W + 1, DType::F32), std::invalid_argument);
  EXPECT_THROW(c.all_to_all(a.data(), a.data() + 1, 4 * W, DType::F32), std::invalid_argument);  // overlapping
}

TEST(MpiCollectives, BroadcastFromFirstAndLastRank) {
  Communicator& c = *g_comm;
  uint64_t salt = 400;
  for (int root : {0, c.world_size() - 1})
    for (DType t : kTypes)
      for (size_t count : {size_t(0), size_t(1), size_t(777)}) {
        std::vector<char> buf, ref;
        test::fill_input(buf, t, 0, count, c.rank(), ++salt);
        test::fill_input(ref, t, 0, count, root, salt);
        c.broadcast(buf.data(), count, t, root);
        EXPECT_TRUE(buf == ref) << "broadcast root " << root << " " << dtype_name(t) << " count " << count;
      }
  c.barrier();
}

// One 64 MiB (fp32) case per op.
TEST(MpiCollectives, SixtyFourMiBPerOp) {
  const size_t w = size_t(g_comm->world_size());
  const size_t count = (size_t(64) << 20) / 4 / w * w;
  check_all_reduce(count, DType::F32, ReduceOp::Sum, true, 501);
  check_reduce_scatter(count / w, DType::F32, ReduceOp::Avg, false, 502);
  check_all_gather(count / w, DType::F32, true, 503);
}

TEST(MpiCollectives, AsyncOpsCompleteInIssueOrder) {
  Communicator& c = *g_comm;
  const size_t w = size_t(c.world_size()), n = 4096 * w;
  constexpr int kOps = 9;
  std::vector<std::vector<char>> bufs(kOps), outs(kOps);
  std::vector<CommHandlePtr> handles;
  for (int k = 0; k < kOps; ++k) {
    test::fill_input(bufs[size_t(k)], DType::F32, 0, n, c.rank(), 600 + uint64_t(k));
    outs[size_t(k)].assign(n * 4, 0);
    switch (k % 3) {
      case 0: handles.push_back(c.all_reduce_async(bufs[size_t(k)].data(), outs[size_t(k)].data(), n, DType::F32, ReduceOp::Sum)); break;
      case 1: handles.push_back(c.reduce_scatter_async(bufs[size_t(k)].data(), outs[size_t(k)].data(), n, DType::F32, ReduceOp::Avg)); break;
      case 2: handles.push_back(c.all_gather_async(bufs[size_t(k)].data(), outs[size_t(k)].data(), n, DType::F32)); break;
    }
  }
  // Waiting on any handle implies every earlier one is done.
  handles[4]->wait();
  for (int k = 0; k <= 4; ++k) EXPECT_TRUE(handles[size_t(k)]->done()) << "op " << k << " not done after op 4 completed";
  handles.back()->wait();
  for (int k = 0; k < kOps; ++k) EXPECT_TRUE(handles[size_t(k)]->done()) << "op " << k;
  for (int k = 0; k < kOps; ++k) {
    std::vector<char> ref;
    if (k % 3 == 0) ref = test::reference_reduce(DType::F32, ReduceOp::Sum, 0, n, c.world_size(), 600 + uint64_t(k));
    if (k % 3 == 1)
      ref = test::reference_reduce(DType::F32, ReduceOp::Avg, size_t(c.rank()) * (n / w), n / w, c.world_size(), 600 + uint64_t(k));
    if (k % 3 == 2) {
      std::vector<char> piece;
      for (int r = 0; r < c.world_size(); ++r) {
        test::fill_input(piece, DType::F32, 0, n / w, r, 600 + uint64_t(k));
        ref.insert(ref.end(), piece.begin(), piece.end());
      }
    }
    outs[size_t(k)].resize(ref.size());
    EXPECT_TRUE(outs[size_t(k)] == ref) << "async op " << k;
  }
}

TEST(MpiCollectives, UnevenLengthsAndBadArgumentsRejected) {
  Communicator& c = *g_comm;
  const size_t w = size_t(c.world_size());
  std::vector<float> a(4 * w + 1), b(4 * w + 1);
  try {
    c.reduce_scatter(a.data(), b.data(), 4 * w + 1, DType::F32, ReduceOp::Sum);
    ADD_FAILURE() << "uneven reduce_scatter accepted";
  } catch (const std::invalid_argument& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("reduce_scatter"), std::string::npos) << m;
    EXPECT_NE(m.find("count " + std::to_string(4 * w + 1)), std::string::npos) << m;
    EXPECT_NE(m.find("world size " + std::to_string(w)), std::string::npos) << m;
    EXPECT_NE(m.find("the caller must pad to a multiple of W"), std::string::npos) << m;
  }
  EXPECT_THROW(c.all_gather(a.data(), b.data(), 4 * w + 1, DType::F32), std::invalid_argument);
  std::vector<int64_t> i(w);
  EXPECT_THROW(c.all_reduce(i.data(), i.data(), w, DType::I64, ReduceOp::Avg), std::invalid_argument);
  EXPECT_THROW(c.broadcast(a.data(), 1, DType::F32, int(w)), std::invalid_argument);
  EXPECT_THROW(g_comm->set_timeout_s(0), std::invalid_argument);
  // Nothing was enqueued by the rejected calls: the next collective still lines up across ranks.
  c.barrier();
}

TEST(MpiCollectives, StatsCountCallsAndAlgorithmBytes) {
  Communicator& c = *g_comm;
  const size_t w = size_t(c.world_size());
  c.barrier();
  c.reset_stats();
  std::vector<float> a(1000 * w), b(1000 * w);
  std::vector<uint16_t> h(64 * w), hs(64);
  c.all_reduce(a.data(), b.data(), a.size(), DType::F32, ReduceOp::Sum);
  c.all_reduce(a.data(), a.data(), a.size(), DType::F32, ReduceOp::Avg);
  c.reduce_scatter(h.data(), hs.data(), h.size(), DType::BF16, ReduceOp::Sum);
  c.all_gather(hs.data(), h.data(), h.size(), DType::F16);
  c.broadcast(a.data(), 10, DType::F32, 0);
  c.barrier();
  CommStats s = c.stats();
  EXPECT_EQ(s[CommOp::AllReduce].calls, 2u);
  EXPECT_EQ(s[CommOp::AllReduce].bytes, 2u * 4000u * w);
  EXPECT_EQ(s[CommOp::ReduceScatter].calls, 1u);
  EXPECT_EQ(s[CommOp::ReduceScatter].bytes, 128u * w);  // the full (un-sharded) buffer
  EXPECT_EQ(s[CommOp::AllGather].bytes, 128u * w);
  EXPECT_EQ(s[CommOp::Broadcast].bytes, 40u);
  EXPECT_EQ(s[CommOp::Barrier].calls, 1u);
  EXPECT_EQ(s[CommOp::Barrier].bytes, 0u);
  EXPECT_GT(s[CommOp::AllReduce].busy_seconds, 0.0);
  c.reset_stats();
  EXPECT_EQ(c.stats()[CommOp::AllReduce].calls, 0u);
}

TEST(MpiCollectives, DebugModePassesMatchingCalls) {
  g_comm->set_debug(true);
  check_all_reduce(33, DType::BF16, ReduceOp::Avg, false, 700);
  check_reduce_scatter(5, DType::F32, ReduceOp::Sum, true, 701);
  g_comm->barrier();
  g_comm->set_debug(false);
}

TEST(MpiCollectives, FactoryPicksMpiForManyRanks) {
  auto c = make_communicator(*g_boot, CommBackend::Auto);
  EXPECT_EQ(c->name(), "mpi");
  EXPECT_THROW(make_communicator(*g_boot, CommBackend::Single), std::invalid_argument);
  std::vector<int64_t> v(1, int64_t(c->rank()) + 1);
  c->all_reduce(v.data(), v.data(), 1, DType::I64, ReduceOp::Sum);
  const int64_t w = c->world_size();
  EXPECT_EQ(v[0], w * (w + 1) / 2);
}

// Bucketed (segment) collectives: a buffer of `count` elements cut into segments of varying length
// (0, 1, odd, long) with owners cycling irregularly over the ranks, listed out of index order. The
// result of each element is what the plain ops give: the rank-order reduction (or the owner's value).
struct SegCase {
  std::vector<Segment> segs;
  std::vector<size_t> begin;  // first element index of each segment in the buffer
};

SegCase cut(std::vector<char>& buf, size_t count, DType t, int world, uint64_t salt) {
  SegCase c;
  const size_t es = dtype_size(t);
  size_t at = 0;
  for (uint64_t k = 0; at < count; ++k) {
    const size_t len = std::min(count - at, size_t(test::mix(salt + k) % 7 == 0 ? 0 : 1 + test::mix(salt * 31 + k) % 97));
    c.segs.push_back({buf.data() + at * es, len, int(test::mix(salt ^ (k * 131)) % uint64_t(world))});
    c.begin.push_back(at);
    at += len;
  }
  // Reverse pairs so the list is not in index order (what a backward-ordered bucket looks like).
  for (size_t i = 0; i + 1 < c.segs.size(); i += 2) {
    std::swap(c.segs[i], c.segs[i + 1]);
    std::swap(c.begin[i], c.begin[i + 1]);
  }
  return c;
}

void check_segment_ops(const std::vector<size_t>& reduce_counts, const std::vector<size_t>& gather_counts) {
  Communicator& c = *g_comm;
  for (DType t : kTypes) {
    for (ReduceOp op : reductions_for(t)) {
      for (size_t count : reduce_counts) {
        const uint64_t salt = 900 + count + 10 * size_t(t) + (op == ReduceOp::Avg ? 5 : 0);
        const size_t es = dtype_size(t);
        // reduce-scatter: owned segments get the sum, the others keep this rank's input.
        std::vector<char> buf, original;
        test::fill_input(buf, t, 0, count, c.rank(), salt);
        original = buf;
        SegCase sc = cut(buf, count, t, c.world_size(), salt);
        c.reduce_scatter_segments_async(sc.segs, t, op)->wait();
        for (size_t i = 0; i < sc.segs.size(); ++i) {
          const Segment& s = sc.segs[i];
          std::vector<char> got(static_cast<char*>(s.data), static_cast<char*>(s.data) + s.count * es);
          std::vector<char> want =
              s.owner == c.rank() ? test::reference_reduce(t, op, sc.begin[i], s.count, c.world_size(), salt, g_per_node)
                                  : std::vector<char>(original.begin() + sc.begin[i] * es,
                                                      original.begin() + (sc.begin[i] + s.count) * es);
          EXPECT_TRUE(got == want) << label("reduce_scatter_segments", t, op, true, count) << " segment " << i;
        }
        // all-reduce: every segment gets the sum.
        test::fill_input(buf, t, 0, count, c.rank(), salt);
        sc = cut(buf, count, t, c.world_size(), salt);
        c.all_reduce_segments_async(sc.segs, t, op)->wait();
        EXPECT_TRUE(buf == test::reference_reduce(t, op, 0, count, c.world_size(), salt, g_per_node))
            << label("all_reduce_segments", t, op, true, count);
      }
    }
    // all-gather: each segment takes its owner's values.
    for (size_t count : gather_counts) {
      const uint64_t salt = 1700 + count;
      const size_t es = dtype_size(t);
      std::vector<char> buf;
      test::fill_input(buf, t, 0, count, c.rank(), salt);
      SegCase sc = cut(buf, count, t, c.world_size(), salt);
      c.all_gather_segments_async(sc.segs, t)->wait();
      for (size_t i = 0; i < sc.segs.size(); ++i) {
        std::vector<char> want;
        test::fill_input(want, t, sc.begin[i], sc.segs[i].count, sc.segs[i].owner, salt);
        std::vector<char> got(static_cast<char*>(sc.segs[i].data),
                              static_cast<char*>(sc.segs[i].data) + sc.segs[i].count * es);
        EXPECT_TRUE(got == want) << "all_gather_segments " << dtype_name(t) << " count=" << count << " segment " << i;
      }
    }
  }
}

TEST(MpiCollectives, SegmentCollectivesEqualThePlainReductionEveryTypeAndCut) {
  Communicator& c = *g_comm;
  check_segment_ops({0, 1, 257, 5003}, {0, 1, 3001});
  // One call each, bytes = the total; a bad owner is refused before anything is sent.
  c.barrier();
  c.reset_stats();
  std::vector<float> a(100);
  std::vector<Segment> segs = {{a.data(), 60, 0}, {a.data() + 60, 40, c.world_size() - 1}};
  c.reduce_scatter_segments_async(segs, DType::F32, ReduceOp::Sum)->wait();
  c.all_gather_segments_async(segs, DType::F32)->wait();
  c.all_reduce_segments_async(segs, DType::F32, ReduceOp::Sum)->wait();
  const CommStats st = c.stats();
  EXPECT_EQ(st[CommOp::ReduceScatter].calls, 1u);
  EXPECT_EQ(st[CommOp::ReduceScatter].bytes, 400u);
  EXPECT_EQ(st[CommOp::AllGather].calls, 1u);
  EXPECT_EQ(st[CommOp::AllReduce].calls, 1u);
  std::vector<Segment> bad = {{a.data(), 10, c.world_size()}};
  EXPECT_THROW(c.reduce_scatter_segments_async(bad, DType::F32, ReduceOp::Sum), std::invalid_argument);
  c.barrier();
}

// A communicator whose buffers hold 64 KiB each carries every call larger than that in chunks: the
// results are the whole call's bit for bit (the same checks as above, on calls of up to 40 chunks),
// its stats count one call per call, and it never holds more than its cap.
TEST(MpiCollectives, ChunkedCallsEqualTheWholeCallAndStayWithinTheCap) {
  CommOptions small = CommOptions::from_env();
  small.timeout_s = 120;
  small.buffer_bytes = 2 * kMinCommChunkBytes;
  MpiCommunicator comm(*g_boot, small);
  EXPECT_EQ(comm.buffer_bytes_for(uint64_t(1) << 30), 2 * kMinCommChunkBytes);
  EXPECT_EQ(comm.buffer_bytes_for(1000), 2 * kMinCommChunkBytes) << "never below the smallest chunk";
  comm.reserve_buffers(uint64_t(1) << 30);
  EXPECT_EQ(comm.buffer_bytes(), 2 * kMinCommChunkBytes);
  MpiCommunicator* whole = g_comm;
  g_comm = &comm;
  const size_t w = size_t(comm.world_size());
  comm.reset_stats();
  for (DType t : kTypes)
    for (ReduceOp op : reductions_for(t))
      for (bool in_place : {false, true}) {
        check_all_reduce(100003, t, op, in_place, 3100 + size_t(t));
        check_reduce_scatter(40009, t, op, in_place, 3200 + size_t(t));
        check_all_gather(40009, t, in_place, 3300 + size_t(t));
      }
  const CommStats st = comm.stats();
  EXPECT_EQ(st[CommOp::AllReduce].calls, 2u * 7u) << "a chunked call is one call";
  // Each dtype's reductions (sum and avg; sum only for i64), in place and not: the whole calls' bytes.
  EXPECT_EQ(st[CommOp::ReduceScatter].bytes, uint64_t(2 * 40009 * w * (2 * 4 + 2 * 2 + 2 * 2 + 1 * 8)));
  check_segment_ops({70001, 123457}, {90001});
  EXPECT_EQ(comm.buffer_bytes(), 2 * kMinCommChunkBytes) << "reserved buffers never grow";
  g_comm = whole;
  comm.barrier();
}

// The layouts a world of W ranks can take: two levels (2 nodes of W/2), one rank per node, and
// mixed nodes (all but the last rank on one node), with the per_node of the reference's fold.
std::vector<std::pair<std::vector<int>, int>> layouts(int W) {
  std::vector<std::pair<std::vector<int>, int>> out;
  std::vector<int> v(static_cast<size_t>(W), 0);
  if (W % 2 == 0 && W >= 4) {
    for (int r = 0; r < W; ++r) v[size_t(r)] = 10 + r / (W / 2);  // any integers name the nodes
    out.push_back({v, W / 2});
  }
  for (int r = 0; r < W; ++r) v[size_t(r)] = r;
  out.push_back({v, 0});
  if (W >= 3) {
    for (int r = 0; r < W; ++r) v[size_t(r)] = r == W - 1;
    out.push_back({v, 0});
  }
  return out;
}

// Over several nodes every op gives the two-level fold (each node's ranks in local order, then the
// node partials in node order, 16-bit partials rounded) or, where the layout has no two levels,
// the rank-order fold; in one call and in chunks of 64 KiB; groups split from it inherit the nodes.
TEST(MpiCollectives, NodeLayoutsGiveTheirFoldForEveryOpTypeSizeAndChunk) {
  const int W = g_comm->world_size();
  MpiCommunicator* whole = g_comm;
  for (const auto& [nodes, per_node] : layouts(W))
    for (uint64_t cap : {uint64_t(64) << 20, 2 * kMinCommChunkBytes}) {
      CommOptions o = CommOptions::from_env();
      o.timeout_s = 120;
      o.buffer_bytes = cap;
      MpiCommunicator comm(*g_boot, o);
      comm.set_node_layout(nodes);
      g_comm = &comm;
      g_per_node = per_node;
      SCOPED_TRACE("layout per_node " + std::to_string(per_node) + " nodes of rank 0/last " + std::to_string(nodes[0]) +
                   "/" + std::to_string(nodes.back()) + ", cap " + std::to_string(cap));
      uint64_t salt = 7000 + cap % 1000 + uint64_t(per_node) * 100;
      for (DType t : kTypes)
        for (ReduceOp op : reductions_for(t))
          for (bool in_place : {false, true}) {
            for (size_t count : {size_t(0), size_t(1), size_t(W) * 7 + 1, size_t(5003)})
              check_all_reduce(count, t, op, in_place, ++salt);
            for (size_t shard : kShards) check_reduce_scatter(shard, t, op, in_place, ++salt);
          }
      for (DType t : kTypes)
        for (bool in_place : {false, true})
          for (size_t shard : kShards) check_all_gather(shard, t, in_place, ++salt);
      for (DType t : kTypes)
        for (size_t chunk : kShards) check_all_to_all(chunk, t, ++salt);
      check_segment_ops({0, 1, 257, 5003}, {0, 1, 3001});
      if (cap < (uint64_t(1) << 20)) {  // calls of many chunks
        check_all_reduce(100003, DType::BF16, ReduceOp::Avg, true, ++salt);
        check_reduce_scatter(40009, DType::F32, ReduceOp::Sum, false, ++salt);
        check_all_gather(40009, DType::F16, true, ++salt);
        check_segment_ops({70001}, {90001});
      }
      for (int root : {0, W - 1})
        for (size_t count : {size_t(0), size_t(777)}) {
          std::vector<char> buf, ref;
          test::fill_input(buf, DType::F32, 0, count, comm.rank(), ++salt);
          test::fill_input(ref, DType::F32, 0, count, root, salt);
          comm.broadcast(buf.data(), count, DType::F32, root);
          EXPECT_TRUE(buf == ref) << "broadcast root " << root << " count " << count;
        }
      // A split of every rank inherits the layout: the same fold as the parent.
      auto all = comm.split(0, comm.rank());
      g_comm = static_cast<MpiCommunicator*>(all.get());
      check_reduce_scatter(1001, DType::F32, ReduceOp::Sum, true, ++salt);
      check_all_reduce(5003, DType::BF16, ReduceOp::Sum, false, ++salt);
      g_comm = &comm;
      all.reset();
      comm.barrier();
    }
  g_comm = whole;
  g_per_node = 0;
  std::vector<int> short_list(size_t(W + 1), 0);
  EXPECT_THROW(g_comm->set_node_layout(short_list), std::invalid_argument);
  g_comm->barrier();
}

}  // namespace
}  // namespace zt

int main(int argc, char** argv) {
  zt::Bootstrap boot(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  zt::CommOptions options = zt::CommOptions::from_env();
  options.timeout_s = 120;  // a desynchronised test aborts instead of hanging CTest
  int rc;
  {
    zt::MpiCommunicator comm(boot, options);
    zt::g_comm = &comm;
    zt::g_boot = &boot;
    rc = RUN_ALL_TESTS();
    zt::g_comm = nullptr;
  }
  return rc;
}
