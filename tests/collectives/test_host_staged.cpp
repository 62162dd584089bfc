// Multi-rank tests of HostStagedCommunicator (under mpirun, 2 and 4 ranks) on the CPU backend, whose
// "device" memory is host memory reached through the same copy lane a GPU's copies use: every op x
// dtype x sum/avg x in-place/out-of-place x size must leave both buffers bitwise as the plain MPI
// communicator leaves them; plus out-of-order waits, polling, dropped handles, errors, accounting.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "collectives/bootstrap.h"
#include "collectives/comm_common.h"
#include "collectives/factory.h"
#include "collectives/host_staged_communicator.h"
#include "collectives/mpi_communicator.h"
#include "kernels/backend.h"
#include "tests/collectives/coll_test_data.h"

namespace zt {
namespace {

Communicator* g_plain = nullptr;
HostStagedCommunicator* g_staged = nullptr;
// The same over slots of kSmallCap / 2 bytes, so that calls of a few tens of KiB are cut.
HostStagedCommunicator* g_small = nullptr;
constexpr uint64_t kSmallCap = uint64_t(256) << 10;
Backend* g_backend = nullptr;
const Bootstrap* g_boot = nullptr;

constexpr DType kTypes[] = {DType::F32, DType::BF16, DType::F16, DType::I64};

struct Call {
  CommOp op;
  size_t count;  // elements of the full buffer
  DType t;
  ReduceOp rop = ReduceOp::Sum;
  bool in_place = false;
  int root = 0;
  std::string label() const {
    return std::string(comm_op_name(op)) + " " + dtype_name(t) + " " + reduce_op_name(rop) +
           (in_place ? " in-place" : " out-of-place") + " count=" + std::to_string(count) + " root=" +
           std::to_string(root);
  }
};

// The two buffers of a call: `a` is the send (all-reduce, reduce-scatter, broadcast) or the full
// receive buffer (all-gather), `b` the other one; unused bytes hold a sentinel.
struct Bufs {
  std::vector<char> a, b;
};

Bufs initial(const Call& k, int rank, int world, uint64_t salt) {
  const size_t es = dtype_size(k.t), shard = k.count / size_t(world);
  Bufs s;
  switch (k.op) {
    case CommOp::AllReduce:
      test::fill_input(s.a, k.t, 0, k.count, rank, salt);
      s.b.assign(k.count * es, char(0x5a));
      break;
    case CommOp::ReduceScatter:
      test::fill_input(s.a, k.t, 0, k.count, rank, salt);
      s.b.assign(shard * es, char(0x5a));
      break;
    case CommOp::AllGather:
      test::fill_input(s.b, k.t, size_t(rank) * shard, shard, rank, salt);
      s.a.assign(k.count * es, char(0x5a));
      if (shard) std::memcpy(s.a.data() + size_t(rank) * shard * es, s.b.data(), shard * es);
      break;
    case CommOp::AllToAll:
      test::fill_input(s.a, k.t, 0, k.count, rank, salt);
      s.b.assign(k.count * es, char(0x5a));
      break;
    default:
      test::fill_input(s.a, k.t, 0, k.count, rank, salt);
      break;
  }
  return s;
}

CommHandlePtr issue(Communicator& c, const Call& k, char* a, char* b) {
  const size_t mine = size_t(c.rank()) * (k.count / size_t(c.world_size())) * dtype_size(k.t);
  switch (k.op) {
    case CommOp::AllReduce: return c.all_reduce_async(a, k.in_place ? a : b, k.count, k.t, k.rop);
    case CommOp::ReduceScatter: return c.reduce_scatter_async(a, k.in_place ? a + mine : b, k.count, k.t, k.rop);
    case CommOp::AllGather: return c.all_gather_async(k.in_place ? a + mine : b, a, k.count, k.t);
    case CommOp::Broadcast: return c.broadcast_async(a, k.count, k.t, k.root);
    case CommOp::Barrier: return c.barrier_async();
    case CommOp::AllToAll: return c.all_to_all_async(a, b, k.count, k.t);
  }
  return nullptr;
}

Bufs run_plain(const Call& k, uint64_t salt) {
  Bufs s = initial(k, g_plain->rank(), g_plain->world_size(), salt);
  issue(*g_plain, k, s.a.data(), s.b.data())->wait();
  return s;
}

// A buffer in backend memory holding `init`; read back with host().
struct DevBuf {
  explicit DevBuf(const std::vector<char>& init) : n(init.size()), p(g_backend->alloc(n ? n : 1)) {
    if (n) g_backend->copy_to_device(p, init.data(), n);
  }
  ~DevBuf() { g_backend->free(p); }
  std::vector<char> host() const {
    std::vector<char> v(n);
    g_backend->synchronize();
    if (n) g_backend->copy_to_host(v.data(), p, n);
    return v;
  }
  char* get() const { return static_cast<char*>(p); }
  size_t n;
  void* p;
};

void expect_same_as_plain(const Call& k, uint64_t salt, HostStagedCommunicator* staged = g_staged) {
  const Bufs want = run_plain(k, salt);
  const Bufs init = initial(k, staged->rank(), staged->world_size(), salt);
  DevBuf a(init.a), b(init.b);
  issue(*staged, k, a.get(), b.get())->wait();
  EXPECT_TRUE(a.host() == want.a) << "buffer a differs from the plain MPI communicator: " << k.label();
  EXPECT_TRUE(b.host() == want.b) << "buffer b differs from the plain MPI communicator: " << k.label();
}

std::vector<ReduceOp> reductions_for(DType t) {
  if (t == DType::I64) return {ReduceOp::Sum};
  return {ReduceOp::Sum, ReduceOp::Avg};
}

TEST(HostStaged, NameAndWorld) {
  EXPECT_EQ(g_staged->name(), "mpi-staged");
  EXPECT_EQ(g_staged->world_size(), g_plain->world_size());
  EXPECT_EQ(g_staged->rank(), g_plain->rank());
}

// split(): a staged group over the inner communicator's group, on the same backend.
TEST(HostStaged, SplitStagesTheInnerGroup) {
  const int W = g_staged->world_size(), r = g_staged->rank(), n = W % 2 == 0 ? 2 : 1;
  auto node = g_staged->split(r / n, r);
  EXPECT_EQ(node->name(), "mpi-staged");
  ASSERT_EQ(node->world_size(), n);
  std::vector<float> v(5, float(r + 1));
  node->all_reduce(v.data(), v.data(), v.size(), DType::F32, ReduceOp::Sum);
  float want = 0;
  for (int q = r / n * n; q < r / n * n + n; ++q) want += float(q + 1);
  for (float x : v) EXPECT_EQ(x, want);
}

TEST(HostStaged, AllReduceBitwiseAsPlainMpi) {
  const size_t w = size_t(g_plain->world_size());
  uint64_t salt = 1000;
  for (size_t count : {size_t(0), size_t(1), w, 7 * w + 1, size_t(5003)})
    for (DType t : kTypes)
      for (ReduceOp op : reductions_for(t))
        for (bool in_place : {false, true}) expect_same_as_plain({CommOp::AllReduce, count, t, op, in_place}, ++salt);
}

TEST(HostStaged, ReduceScatterBitwiseAsPlainMpi) {
  const size_t w = size_t(g_plain->world_size());
  uint64_t salt = 2000;
  for (size_t shard : {size_t(0), size_t(1), size_t(3), size_t(1001)})
    for (DType t : kTypes)
      for (ReduceOp op : reductions_for(t))
        for (bool in_place : {false, true})
          expect_same_as_plain({CommOp::ReduceScatter, shard * w, t, op, in_place}, ++salt);
}

TEST(HostStaged, AllGatherBitwiseAsPlainMpi) {
  const size_t w = size_t(g_plain->world_size());
  uint64_t salt = 3000;
  for (size_t shard : {size_t(0), size_t(1), size_t(3), size_t(1001)})
    for (DType t : kTypes)
      for (bool in_place : {false, true})
        expect_same_as_plain({CommOp::AllGather, shard * w, t, ReduceOp::Sum, in_place}, ++salt);
}

TEST(HostStaged, AllToAllBitwiseAsPlainMpi) {
  const size_t w = size_t(g_plain->world_size());
  uint64_t salt = 3500;
  for (size_t chunk : {size_t(0), size_t(1), size_t(3), size_t(1001)})
    for (DType t : kTypes) expect_same_as_plain({CommOp::AllToAll, chunk * w, t}, ++salt);
}

TEST(HostStaged, BroadcastBitwiseAsPlainMpi) {
  uint64_t salt = 4000;
  for (int root : {0, g_plain->world_size() - 1})
    for (DType t : kTypes)
      for (size_t count : {size_t(0), size_t(1), size_t(777)}) {
        Call k{CommOp::Broadcast, count, t};
        k.root = root;
        expect_same_as_plain(k, ++salt);
      }
}

// Several collectives in flight at once, each with its own staging buffer, waited in reverse order
// or polled: each result is still the plain communicator's, and the pool is reused afterwards.
// Bucketed forms: segments cut from two buffers (an empty one, single elements, owners out of
// order), every dtype and reduction; both buffers must end bitwise as the plain communicator leaves
// its host copies of them.
TEST(HostStaged, SegmentOpsBitwiseAsPlainMpi) {
  const int w = g_plain->world_size(), r = g_plain->rank();
  const size_t counts[] = {5, 0, 1, 1001, 7, 64};
  const int owners[] = {w - 1, 0, 1 % w, 0, w - 1, 1 % w};
  constexpr size_t K = sizeof counts / sizeof counts[0];
  uint64_t salt = 7000;
  for (CommOp op : {CommOp::ReduceScatter, CommOp::AllReduce, CommOp::AllGather})
    for (DType t : kTypes)
      for (ReduceOp rop : op == CommOp::AllGather ? std::vector<ReduceOp>{ReduceOp::Sum} : reductions_for(t)) {
        const size_t es = dtype_size(t);
        size_t n[2] = {0, 0};  // segments alternate between the two buffers
        for (size_t i = 0; i < K; ++i) n[i % 2] += counts[i];
        std::vector<char> host[2];
        for (int b = 0; b < 2; ++b) test::fill_input(host[b], t, size_t(b) * 100000, n[b], r, ++salt);
        DevBuf dev0(host[0]), dev1(host[1]);
        char* devp[2] = {dev0.get(), dev1.get()};
        std::vector<Segment> hs, ds;
        size_t off[2] = {0, 0};
        for (size_t i = 0; i < K; ++i) {
          const int b = int(i % 2);
          hs.push_back({host[b].data() + off[b] * es, counts[i], owners[i]});
          ds.push_back({devp[b] + off[b] * es, counts[i], owners[i]});
          off[b] += counts[i];
        }
        const std::string what = std::string(comm_op_name(op)) + " segments " + dtype_name(t) + " " + reduce_op_name(rop);
        auto run = [&](Communicator& c, const std::vector<Segment>& sg) {
          if (op == CommOp::ReduceScatter) return c.reduce_scatter_segments_async(sg, t, rop);
          if (op == CommOp::AllReduce) return c.all_reduce_segments_async(sg, t, rop);
          return c.all_gather_segments_async(sg, t);
        };
        run(*g_plain, hs)->wait();
        run(*g_staged, ds)->wait();
        EXPECT_TRUE(dev0.host() == host[0]) << what << ": buffer 0";
        EXPECT_TRUE(dev1.host() == host[1]) << what << ": buffer 1";
      }
  EXPECT_THROW(g_staged->all_reduce_segments_async({{nullptr, 3, 0}}, DType::F32, ReduceOp::Sum), std::invalid_argument);
  EXPECT_THROW(g_staged->reduce_scatter_segments_async({{nullptr, 0, w}}, DType::F32, ReduceOp::Sum),
               std::invalid_argument);
  g_staged->barrier();
}

TEST(HostStaged, OverlappingCallsWaitedOutOfOrderAndPolled) {
  const size_t w = size_t(g_plain->world_size()), n = 4096 * w;
  const Call calls[] = {{CommOp::AllReduce, n, DType::BF16, ReduceOp::Sum, true},
                        {CommOp::ReduceScatter, n, DType::F32, ReduceOp::Avg, false},
                        {CommOp::AllGather, n, DType::BF16, ReduceOp::Sum, true},
                        {CommOp::ReduceScatter, n, DType::BF16, ReduceOp::Sum, true},
                        {CommOp::AllReduce, n + 1, DType::F32, ReduceOp::Avg, false}};
  constexpr int K = 5;
  for (int round = 0; round < 2; ++round) {
    std::vector<std::unique_ptr<DevBuf>> as, bs;
    std::vector<CommHandlePtr> hs;
    const size_t before = g_staged->staging_bytes();
    for (int i = 0; i < K; ++i) {
      const Bufs init = initial(calls[i], g_staged->rank(), int(w), 5000 + uint64_t(i));
      as.push_back(std::make_unique<DevBuf>(init.a));
      bs.push_back(std::make_unique<DevBuf>(init.b));
      hs.push_back(issue(*g_staged, calls[i], as.back()->get(), bs.back()->get()));
    }
    if (round == 1) {
      EXPECT_EQ(before, g_staged->staging_bytes()) << "round 2 should reuse round 1's buffers";
    }
    if (round == 0) {
      for (int i = K - 1; i >= 0; --i) hs[size_t(i)]->wait();
    } else {
      for (int i = 0; i < K; ++i)
        while (!hs[size_t(i)]->done()) {
        }
    }
    for (int i = 0; i < K; ++i) {
      const Bufs want = run_plain(calls[i], 5000 + uint64_t(i));
      EXPECT_TRUE(as[size_t(i)]->host() == want.a) << "round " << round << " " << calls[i].label();
      EXPECT_TRUE(bs[size_t(i)]->host() == want.b) << "round " << round << " " << calls[i].label();
    }
  }
}

TEST(HostStaged, DroppedHandleLeavesTheBufferAloneAndNothingHangs) {
  const size_t w = size_t(g_plain->world_size());
  std::vector<char> init(1000 * w * 4, 0);
  const std::vector<char> before = init;
  {
    DevBuf a(init);
    issue(*g_staged, {CommOp::AllReduce, 1000 * w, DType::F32}, a.get(), a.get()).reset();
    g_staged->barrier();
    EXPECT_TRUE(a.host() == before) << "a handle dropped before wait() must not copy its result back";
  }
  expect_same_as_plain({CommOp::AllReduce, 3 * w, DType::F32}, 6000);  // still in step across ranks
}

TEST(HostStaged, BadArgumentsRejectedBeforeAnyCopy) {
  const size_t w = size_t(g_plain->world_size());
  DevBuf a(std::vector<char>((4 * w + 1) * 8, 0)), b(std::vector<char>((4 * w + 1) * 8, 0));
  try {
    g_staged->reduce_scatter(a.get(), b.get(), 4 * w + 1, DType::F32, ReduceOp::Sum);
    ADD_FAILURE() << "uneven reduce_scatter accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("the caller must pad to a multiple of W"), std::string::npos) << e.what();
  }
  EXPECT_THROW(g_staged->all_gather(a.get(), b.get(), 4 * w + 1, DType::F32), std::invalid_argument);
  EXPECT_THROW(g_staged->all_reduce(a.get(), a.get(), w, DType::I64, ReduceOp::Avg), std::invalid_argument);
  EXPECT_THROW(g_staged->broadcast(a.get(), 1, DType::F32, int(w)), std::invalid_argument);
  g_staged->barrier();  // nothing was issued by the rejected calls
}

TEST(HostStaged, StatsAreTheInnerCommunicators) {
  const size_t w = size_t(g_plain->world_size());
  g_staged->barrier();
  g_staged->reset_stats();
  DevBuf a(std::vector<char>(1000 * w * 4, 1)), h(std::vector<char>(64 * w * 2, 1));
  g_staged->all_reduce(a.get(), a.get(), 1000 * w, DType::F32, ReduceOp::Sum);
  g_staged->reduce_scatter(h.get(), h.get() + size_t(g_staged->rank()) * 64 * 2, 64 * w, DType::BF16,
                           ReduceOp::Sum);
  const CommStats s = g_staged->stats();
  EXPECT_EQ(s[CommOp::AllReduce].calls, 1u);
  EXPECT_EQ(s[CommOp::AllReduce].bytes, 4000u * w);
  EXPECT_EQ(s[CommOp::ReduceScatter].bytes, 128u * w);
}

// Calls larger than a slot: cut into inner calls of at most a slot, each of them counted in the
// statistics, the staging never above the cap, and both buffers bitwise as one plain call leaves them.
TEST(HostStaged, CallsLargerThanASlotAreCutAndStayBitwise) {
  const size_t w = size_t(g_plain->world_size()), chunk = g_small->staging_chunk_bytes();
  ASSERT_EQ(chunk, kSmallCap / 2);
  uint64_t salt = 9000;
  for (DType t : {DType::F32, DType::BF16, DType::I64}) {
    const size_t es = dtype_size(t), flat = chunk / es, per_shard = chunk / (w * es);
    struct Case {
      CommOp op;
      size_t count, calls;
    };
    const Case cases[] = {{CommOp::AllReduce, 2 * flat + 5, 3},     {CommOp::AllReduce, flat, 1},
                          {CommOp::Broadcast, 3 * flat, 3},         {CommOp::ReduceScatter, (2 * per_shard + 7) * w, 3},
                          {CommOp::AllGather, (per_shard + 1) * w, 2}, {CommOp::AllGather, per_shard * w, 1},
                          {CommOp::AllToAll, (per_shard / 2 + 1) * w, 2}, {CommOp::AllToAll, (per_shard / 2) * w, 1}};
    for (const Case& c : cases)
      for (bool in_place : {false, true}) {
        if (c.op == CommOp::AllToAll && in_place) continue;  // it has no in-place form
        Call k{c.op, c.count, t, ReduceOp::Sum, in_place};
        if (c.op == CommOp::Broadcast) k.root = int(w) - 1;
        g_small->reset_stats();
        expect_same_as_plain(k, ++salt, g_small);
        EXPECT_EQ(g_small->stats()[c.op].calls, c.calls) << k.label();
        EXPECT_EQ(g_small->stats()[c.op].bytes, comm_algorithm_bytes(c.op, c.count, t)) << k.label();
        EXPECT_LE(g_small->staging_bytes(), kSmallCap) << k.label();
      }
  }
}

// A segment list longer than a slot: runs cut across segments and inside a long one, owners kept.
TEST(HostStaged, SegmentListsLongerThanASlotAreCutAndStayBitwise) {
  const int w = g_plain->world_size(), r = g_plain->rank();
  const DType t = DType::F32;
  const size_t es = 4, flat = g_small->staging_chunk_bytes() / es;
  const size_t counts[] = {flat - 3, 7, 2 * flat + 11, 0, 5};
  const int owners[] = {w - 1, 0, 1 % w, 0, w - 1};
  uint64_t salt = 9500;
  for (CommOp op : {CommOp::ReduceScatter, CommOp::AllReduce, CommOp::AllGather}) {
    size_t n = 0;
    for (size_t c : counts) n += c;
    std::vector<char> host;
    test::fill_input(host, t, 0, n, r, ++salt);
    DevBuf dev(host);
    std::vector<Segment> hs, ds;
    size_t off = 0;
    for (size_t i = 0; i < 5; ++i) {
      hs.push_back({host.data() + off * es, counts[i], owners[i]});
      ds.push_back({dev.get() + off * es, counts[i], owners[i]});
      off += counts[i];
    }
    auto run = [&](Communicator& c, const std::vector<Segment>& sg) {
      if (op == CommOp::ReduceScatter) return c.reduce_scatter_segments_async(sg, t, ReduceOp::Sum);
      if (op == CommOp::AllReduce) return c.all_reduce_segments_async(sg, t, ReduceOp::Sum);
      return c.all_gather_segments_async(sg, t);
    };
    g_small->reset_stats();
    run(*g_plain, hs)->wait();
    run(*g_small, ds)->wait();
    EXPECT_TRUE(dev.host() == host) << comm_op_name(op) << " segments cut into runs";
    EXPECT_EQ(g_small->stats()[op].calls, (n * es + g_small->staging_chunk_bytes() - 1) / g_small->staging_chunk_bytes())
        << comm_op_name(op);
  }
}

// Many cut calls in flight at once: the third inner call completes the first before it stages, so
// the staging stays within the cap while every call is still pending; waited in reverse order.
TEST(HostStaged, CallsInFlightShareTwoSlots) {
  const size_t w = size_t(g_plain->world_size()), flat = g_small->staging_chunk_bytes() / 4;
  std::vector<Call> calls;
  for (int i = 0; i < 4; ++i) {
    calls.push_back({CommOp::AllReduce, flat + 3 + size_t(i), DType::F32, ReduceOp::Sum, i % 2 == 0});
    calls.push_back({CommOp::ReduceScatter, (flat / w + 1) * w, DType::F32, ReduceOp::Avg, i % 2 == 1});
  }
  std::vector<std::unique_ptr<DevBuf>> as, bs;
  std::vector<CommHandlePtr> hs;
  for (size_t i = 0; i < calls.size(); ++i) {
    const Bufs init = initial(calls[i], g_small->rank(), int(w), 9800 + i);
    as.push_back(std::make_unique<DevBuf>(init.a));
    bs.push_back(std::make_unique<DevBuf>(init.b));
    hs.push_back(issue(*g_small, calls[i], as.back()->get(), bs.back()->get()));
    EXPECT_LE(g_small->staging_bytes(), kSmallCap) << "after issuing call " << i;
  }
  for (size_t i = hs.size(); i-- > 0;) hs[i]->wait();
  for (size_t i = 0; i < calls.size(); ++i) {
    const Bufs want = run_plain(calls[i], 9800 + i);
    EXPECT_TRUE(as[i]->host() == want.a) << calls[i].label();
    EXPECT_TRUE(bs[i]->host() == want.b) << calls[i].label();
  }
  // A dropped handle of a cut call copies nothing back and leaves the ranks in step.
  std::vector<char> init(4 * (flat + 9), 0);
  {
    DevBuf a(init);
    issue(*g_small, {CommOp::AllReduce, flat + 9, DType::F32}, a.get(), a.get()).reset();
    g_small->barrier();
    EXPECT_TRUE(a.host() == init) << "a dropped cut call must not copy its result back";
  }
  expect_same_as_plain({CommOp::AllReduce, 3 * w, DType::F32}, 9900, g_small);
}

// reserve_buffers(L) sizes both slots to comm_chunk_bytes(L, cap), as buffer_bytes_for(L) says, and
// they never grow: a larger call is cut at that size.
TEST(HostStaged, ReservedSlotsAreWhatBufferBytesForSays) {
  zt::offload::PinnedAllocatorOptions pin;
  pin.pin_memory = false;
  CommOptions options = CommOptions::from_env();
  options.buffer_bytes = kSmallCap;
  HostStagedCommunicator c(std::make_unique<MpiCommunicator>(*g_boot, options), *g_backend, pin, kSmallCap);
  const uint64_t L = 100000;
  const uint64_t want = c.buffer_bytes_for(L);
  EXPECT_EQ(want, 4 * comm_chunk_bytes(L, kSmallCap)) << "inner pack + receive, and two slots";
  c.reserve_buffers(L);
  EXPECT_EQ(c.buffer_bytes(), want);
  EXPECT_EQ(c.staging_bytes(), 2 * comm_chunk_bytes(L, kSmallCap));
  EXPECT_EQ(c.staging_chunk_bytes(), comm_chunk_bytes(L, kSmallCap));
  const size_t n = 3 * L / 4 + 1;  // 0.75 L float32 elements = 3 L bytes: 4 inner calls of L bytes
  std::vector<char> host;
  test::fill_input(host, DType::F32, 0, n, c.rank(), 9990);
  DevBuf dev(host);
  g_plain->all_reduce(host.data(), host.data(), n, DType::F32, ReduceOp::Sum);
  c.all_reduce(dev.get(), dev.get(), n, DType::F32, ReduceOp::Sum);
  EXPECT_TRUE(dev.host() == host);
  EXPECT_EQ(c.stats()[CommOp::AllReduce].calls, (n * 4 + L - 1) / L);
  EXPECT_EQ(c.buffer_bytes(), want) << "the slots must not grow after the reservation";
}

TEST(HostStaged, FactoryBuildsItForABackend) {
  auto c = make_communicator(*g_boot, CommBackend::MpiHostStaged, CommOptions::from_env(), g_backend);
  EXPECT_EQ(c->name(), "mpi-staged");
  EXPECT_THROW(make_communicator(*g_boot, CommBackend::MpiHostStaged), std::invalid_argument);
  int64_t one = c->rank() + 1;
  DevBuf v(std::vector<char>(reinterpret_cast<char*>(&one), reinterpret_cast<char*>(&one) + 8));
  c->all_reduce(v.get(), v.get(), 1, DType::I64, ReduceOp::Sum);
  int64_t sum;
  std::memcpy(&sum, v.host().data(), 8);
  const int64_t W = c->world_size();
  EXPECT_EQ(sum, W * (W + 1) / 2);
}

}  // namespace
}  // namespace zt

int main(int argc, char** argv) {
  zt::Bootstrap boot(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  zt::CommOptions options = zt::CommOptions::from_env();
  options.timeout_s = 120;  // a desynchronised test aborts instead of hanging CTest
  auto backend = zt::make_cpu_backend();
  int rc;
  {
    zt::MpiCommunicator plain(boot, options);
    zt::offload::PinnedAllocatorOptions pin;
    pin.pin_memory = false;
    zt::HostStagedCommunicator staged(std::make_unique<zt::MpiCommunicator>(boot, options), *backend, pin);
    zt::HostStagedCommunicator small(std::make_unique<zt::MpiCommunicator>(boot, options), *backend, pin,
                                     zt::kSmallCap);
    zt::g_plain = &plain;
    zt::g_staged = &staged;
    zt::g_small = &small;
    zt::g_backend = backend.get();
    zt::g_boot = &boot;
    rc = RUN_ALL_TESTS();
    zt::g_plain = nullptr;
    zt::g_staged = nullptr;
    zt::g_small = nullptr;
  }
  return rc;
}
