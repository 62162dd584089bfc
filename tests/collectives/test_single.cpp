// Unit tests (one process): names and sizes, fp16/bf16 conversions, the rank-order reduction,
// option parsing, the bootstrap without a launcher, and the world-size-1 communicator.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "collectives/bootstrap.h"
#include "collectives/comm_common.h"
#include "collectives/factory.h"
#include "collectives/fixed_order_reduce.h"
#include "base/half_float.h"
#include "collectives/single_communicator.h"
#include "tests/collectives/coll_test_data.h"

namespace zt {
namespace {

TEST(CollectivesCommTypes, SizesAndNames) {
  EXPECT_EQ(dtype_size(DType::F32), 4u);
  EXPECT_EQ(dtype_size(DType::BF16), 2u);
  EXPECT_EQ(dtype_size(DType::F16), 2u);
  EXPECT_EQ(dtype_size(DType::I64), 8u);
  EXPECT_STREQ(comm_op_name(CommOp::AllReduce), "all_reduce");
  EXPECT_STREQ(comm_op_name(CommOp::ReduceScatter), "reduce_scatter");
  EXPECT_STREQ(comm_op_name(CommOp::AllGather), "all_gather");
  EXPECT_STREQ(comm_op_name(CommOp::Broadcast), "broadcast");
  EXPECT_STREQ(comm_op_name(CommOp::Barrier), "barrier");
}

TEST(CollectivesFixedOrderReduce, RankOrderFoldAndSingleRounding) {
  // (1e8 + 1) + (-1e8) = 0 in fp32 in rank order, while (-1e8 + 1e8) + 1 would be 1.
  std::vector<float> rows = {1e8f, 1.0f, -1e8f};
  float out = -7;
  reduce_rank_order(rows.data(), 1, 3, DType::F32, ReduceOp::Sum, &out);
  EXPECT_EQ(out, (1e8f + 1.0f) + -1e8f);
  reduce_rank_order(rows.data(), 1, 3, DType::F32, ReduceOp::Avg, &out);
  EXPECT_EQ(out, ((1e8f + 1.0f) + -1e8f) / 3.0f);
  // bf16: 1 + 2^-8 + 2^-8 accumulates in fp32 to 1 + 2^-7 (exact in bf16); rounding each step would give 1.
  std::vector<uint16_t> h = {f32_to_bf16_bits(1.0f), f32_to_bf16_bits(std::ldexp(1.0f, -8)), f32_to_bf16_bits(std::ldexp(1.0f, -8))};
  uint16_t hout = 0;
  reduce_rank_order(h.data(), 1, 3, DType::BF16, ReduceOp::Sum, &hout);
  EXPECT_EQ(bf16_bits_to_f32(hout), 1.0f + std::ldexp(1.0f, -7));
  // i64 wraps instead of trapping.
  std::vector<int64_t> q = {std::numeric_limits<int64_t>::max(), 1};
  int64_t qout = 0;
  reduce_rank_order(q.data(), 1, 2, DType::I64, ReduceOp::Sum, &qout);
  EXPECT_EQ(qout, std::numeric_limits<int64_t>::min());
}

TEST(CollectivesFixedOrderReduce, MatchesTestReferenceAcrossBlocks) {
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg}) {
      const int w = 5;
      const size_t n = 5000;  // spans several internal blocks
      std::vector<char> rows, piece;
      for (int r = 0; r < w; ++r) {
        test::fill_input(piece, t, 0, n, r, 42);
        rows.insert(rows.end(), piece.begin(), piece.end());
      }
      std::vector<char> out(n * dtype_size(t));
      reduce_rank_order(rows.data(), n, w, t, op, out.data());
      EXPECT_TRUE(out == test::reference_reduce(t, op, 0, n, w, 42)) << dtype_name(t) << " " << reduce_op_name(op);
    }
  }
}

// The row-list form folds rows that lie anywhere, in list order, into out, which may be one of
// them (a rank's own row read in place): the same bits as the contiguous form.
TEST(CollectivesFixedOrderReduce, RowListMatchesContiguousRowsAndMayWriteOverOne) {
  for (DType t : {DType::F32, DType::BF16, DType::I64}) {
    const int w = 4;
    const size_t n = 4500, es = dtype_size(t);
    std::vector<char> rows, piece;
    std::vector<std::vector<char>> apart(static_cast<size_t>(w));
    for (int r = 0; r < w; ++r) {
      test::fill_input(piece, t, 0, n, r, 7);
      if (t == DType::I64) piece.assign(n * es, char(r + 1));  // wraps as two's complement, any bits
      rows.insert(rows.end(), piece.begin(), piece.end());
      apart[size_t(w - 1 - r)] = piece;  // stored in another order: only the list says which is which
    }
    std::vector<char> expect(n * es);
    reduce_rank_order(rows.data(), n, w, t, ReduceOp::Sum, expect.data());
    std::vector<const void*> list(static_cast<size_t>(w));
    for (int r = 0; r < w; ++r) list[size_t(r)] = apart[size_t(w - 1 - r)].data();
    std::vector<char> out(n * es);
    reduce_row_list(list.data(), n, w, t, 0, out.data());
    EXPECT_TRUE(out == expect) << dtype_name(t);
    reduce_row_list(list.data(), n, w, t, 0, apart[size_t(w - 1 - 2)].data());  // out is row 2
    EXPECT_TRUE(apart[size_t(w - 1 - 2)] == expect) << dtype_name(t) << ", written over row 2";
  }
}

TEST(CollectivesCommOptions, FromEnvironment) {
  setenv("ZT_COMM_TIMEOUT_S", "12.5", 1);
  setenv("ZT_COMM_DEBUG", "1", 1);
  CommOptions o = CommOptions::from_env();
  EXPECT_EQ(o.timeout_s, 12.5);
  EXPECT_TRUE(o.debug);
  setenv("ZT_COMM_TIMEOUT_S", "-3", 1);
  try {
    CommOptions::from_env();
    ADD_FAILURE() << "negative timeout accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("ZT_COMM_TIMEOUT_S = '-3'"), std::string::npos) << e.what();
  }
  setenv("ZT_COMM_TIMEOUT_S", "300", 1);
  setenv("ZT_COMM_DEBUG", "maybe", 1);
  EXPECT_THROW(CommOptions::from_env(), std::invalid_argument);
  unsetenv("ZT_COMM_TIMEOUT_S");
  unsetenv("ZT_COMM_DEBUG");
  o = CommOptions::from_env();
  EXPECT_EQ(o.timeout_s, 300.0);
  EXPECT_FALSE(o.debug);
}

TEST(CollectivesBootstrap, WithoutLauncherIsWorldOfOne) {
  Bootstrap boot;
  EXPECT_EQ(boot.rank(), 0);
  EXPECT_EQ(boot.world_size(), 1);
  EXPECT_EQ(boot.local_rank(), 0);
  EXPECT_EQ(boot.node_count(), 1);
  EXPECT_FALSE(boot.mpi_active());
  auto c = make_communicator(boot, CommBackend::Auto);
  EXPECT_EQ(c->name(), "single");
#if ZT_HAVE_MPI
  EXPECT_THROW(make_communicator(boot, CommBackend::Mpi), std::runtime_error);
#endif
  EXPECT_NE(collectives_versions().find("MPI: "), std::string::npos);
}

TEST(CollectivesSingleCommunicator, EveryOpIsACopyWithStats) {
  SingleCommunicator c;
  EXPECT_EQ(c.world_size(), 1);
  for (DType t : {DType::F32, DType::BF16, DType::F16, DType::I64}) {
    for (size_t n : {size_t(0), size_t(1), size_t(1001)}) {
      std::vector<char> in, out(n * dtype_size(t), 0x11);
      test::fill_input(in, t, 0, n, 0, 9);
      c.all_reduce(in.data(), out.data(), n, t, ReduceOp::Sum);
      EXPECT_TRUE(out == in) << dtype_name(t) << " " << n;
      if (t != DType::I64) {
        std::vector<char> inplace = in;
        c.reduce_scatter(inplace.data(), inplace.data(), n, t, ReduceOp::Avg);
        EXPECT_TRUE(inplace == in);
      }
      std::fill(out.begin(), out.end(), 0x22);
      c.all_gather(in.data(), out.data(), n, t);
      EXPECT_TRUE(out == in);
      c.broadcast(out.data(), n, t, 0);
      EXPECT_TRUE(out == in);
      std::fill(out.begin(), out.end(), 0x33);
      c.all_to_all(in.data(), out.data(), n, t);
      EXPECT_TRUE(out == in);
    }
  }
  c.barrier();
  std::vector<int64_t> v(2);
  EXPECT_THROW(c.all_reduce(v.data(), v.data(), 2, DType::I64, ReduceOp::Avg), std::invalid_argument);
  EXPECT_THROW(c.broadcast(v.data(), 2, DType::I64, 1), std::invalid_argument);
  CommStats s = c.stats();
  EXPECT_EQ(s[CommOp::AllReduce].calls, 12u);
  EXPECT_EQ(s[CommOp::AllReduce].bytes, 1002u * (4 + 2 + 2 + 8));
  EXPECT_EQ(s[CommOp::ReduceScatter].calls, 9u);
  EXPECT_EQ(s[CommOp::Barrier].calls, 1u);
  EXPECT_EQ(s[CommOp::AllToAll].calls, 12u);
  EXPECT_EQ(s[CommOp::AllToAll].bytes, 1002u * (4 + 2 + 2 + 8));
  EXPECT_THROW(c.all_to_all(v.data(), v.data(), 2, DType::I64), std::invalid_argument);  // no in-place form
  c.reset_stats();
  EXPECT_EQ(c.stats()[CommOp::AllReduce].calls, 0u);
  auto h = c.all_reduce_async(v.data(), v.data(), 2, DType::I64, ReduceOp::Sum);
  EXPECT_TRUE(h->done());
}

TEST(CollectivesCommChecks, UnevenSplitMessage) {
  try {
    check_even_split(CommOp::AllGather, 10, 4);
    ADD_FAILURE() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "all_gather: count 10 does not split evenly over world size 4 (remainder 2); the caller must pad "
                 "to a multiple of W");
  }
  EXPECT_NO_THROW(check_even_split(CommOp::AllGather, 12, 4));
}

TEST(SingleCommunicator, SplitsIntoAWorldOfOne) {
  SingleCommunicator c;
  auto g = c.split(3, 0);
  EXPECT_EQ(g->world_size(), 1);
  EXPECT_EQ(g->rank(), 0);
  float x = 2.5f;
  g->all_reduce(&x, &x, 1, DType::F32, ReduceOp::Sum);
  EXPECT_EQ(x, 2.5f);
  EXPECT_EQ(c.stats()[CommOp::AllReduce].calls, 0u) << "the group counts its own calls";
  EXPECT_THROW(c.split(-1, 0), std::invalid_argument);
}

}  // namespace
}  // namespace zt
