// MiCS (mics_shard_size) at 4 ranks as two nodes of 2, and at 2 ranks: the partition spans a shard
// group of s consecutive ranks and the gradient shards are all-reduced across the replicas in the
// boundary micro-step, one call per gradient bucket as its reduce-scatter completes. s = the world
// is bitwise stage 3 (losses, norms, the parameter checksum); s = the node is within 1e-6 of it (the
// sum is made in another order) with replica calls only at the boundary, at accumulation 1 and 3,
// and bitwise the same whatever the bucket size; the hierarchical gather (across the group's nodes, then inside
// each) is bitwise the flat MiCS run; measured link bytes equal the predictor's in every case.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/engine/engine_plan.h"
#include "tests/engine/engine_test_util.h"

namespace zt::test {
namespace {

int node_size() {
  const int W = world().comm->world_size();
  return W >= 4 ? W / 2 : W;
}

EngineOptions mics_options(int accum, int s, bool hierarchical) {
  EngineOptions o = base_options(3, accum, DType::F32, true);
  o.ranks_per_node = node_size();
  o.zero.mics_shard_size = s;
  o.gather.mics_hierarchical = hierarchical;
  return o;
}

void expect_links_predicted(const ModelConfig& model, const EngineOptions& o, const RunResult& r) {
  Engine probe(model, o, *world().backend, *world().comm);
  const LinkBytes want = probe.expected_link_bytes_per_step();
  for (const StepStats& st : r.stats) {
    EXPECT_EQ(st.comm_links.intra, want.intra);
    EXPECT_EQ(st.comm_links.inter, want.inter);
  }
}

void expect_close(const std::vector<double>& a, const std::vector<double>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_LE(std::abs(a[i] - b[i]), 1e-6 * std::max(1.0, std::abs(b[i]))) << what << " " << i;
}

TEST(Mics, ShardGroupOfTheWorldIsBitwiseStage3) {
  const int W = world().comm->world_size();
  if (W < 2) GTEST_SKIP() << "needs two ranks";
  const ModelConfig model = tiny_model(true);
  for (int accum : {1, 3}) {
    if (kGlobalBatch % (W * accum)) continue;
    SCOPED_TRACE("accum " + std::to_string(accum));
    const RunResult flat = run_engine(model, mics_options(accum, 0, false), 3);
    const RunResult mics = run_engine(model, mics_options(accum, W, false), 3);
    EXPECT_EQ(mics.losses, flat.losses);
    EXPECT_EQ(mics.norms, flat.norms);
    EXPECT_EQ(mics.summary.checksum, flat.summary.checksum);
    for (const StepStats& st : mics.stats)
      EXPECT_EQ(st.groups.by_role[int(CommRole::Replica)].calls[int(CommOp::AllReduce)], 0u) << "one replica: none";
    expect_links_predicted(model, mics_options(accum, W, false), mics);
  }
}

TEST(Mics, NodeShardGroupsReplicateAcrossNodes) {
  const int W = world().comm->world_size();
  if (W < 4) GTEST_SKIP() << "needs two nodes of two ranks";
  const ModelConfig model = tiny_model(true);
  const int n = node_size();
  for (int accum : {1, 3}) {
    if (kGlobalBatch % (W * accum)) continue;
    SCOPED_TRACE("accum " + std::to_string(accum));
    const RunResult flat = run_engine(model, mics_options(accum, 0, false), 3);
    const RunResult mics = run_engine(model, mics_options(accum, n, false), 3);
    expect_close(mics.losses, flat.losses, "loss");
    expect_close(mics.norms, flat.norms, "norm");
    Engine probe(model, mics_options(accum, n, false), *world().backend, *world().comm);
    for (const StepStats& st : mics.stats) {
      const uint64_t calls = st.groups.by_role[int(CommRole::Replica)].calls[int(CommOp::AllReduce)];
      EXPECT_GE(calls, 1u) << "at the accumulation boundary";
      EXPECT_LE(calls, uint64_t(probe.grad_buckets())) << "at most one per bucket, once per step";
      EXPECT_GT(st.comm_links.inter, 0u);
    }
    expect_links_predicted(model, mics_options(accum, n, false), mics);
    // Only the replica all-reduce and the loss cross nodes: fewer bytes than flat stage 3's.
    EXPECT_LT(mics.stats.back().comm_links.inter, flat.stats.back().comm_links.inter);
  }
}

// The replica all-reduce runs per bucket as each bucket's reduce-scatter completes (beside the rest
// of the boundary's backward): small buckets issue several calls a step and give the same bits as
// one bucket, whose single call is the old once-a-step all-reduce.
TEST(Mics, ReplicaAllReducePerBucketIsBitwiseOneCall) {
  const int W = world().comm->world_size();
  if (W < 4) GTEST_SKIP() << "needs two nodes of two ranks";
  const ModelConfig model = tiny_model(true);
  EngineOptions one = mics_options(1, node_size(), false), many = one;
  one.reduce.bucket_elems = int64_t(1) << 40;
  many.reduce.bucket_elems = 1024;
  const RunResult a = run_engine(model, one, 3), b = run_engine(model, many, 3);
  EXPECT_EQ(a.losses, b.losses);
  EXPECT_EQ(a.norms, b.norms);
  EXPECT_EQ(a.summary.checksum, b.summary.checksum);
  for (size_t s = 0; s < b.stats.size(); ++s) {
    EXPECT_EQ(a.stats[s].groups.by_role[int(CommRole::Replica)].calls[int(CommOp::AllReduce)], 1u);
    EXPECT_GT(b.stats[s].groups.by_role[int(CommRole::Replica)].calls[int(CommOp::AllReduce)], 1u);
    EXPECT_EQ(a.stats[s].groups.by_role[int(CommRole::Replica)].bytes[int(CommOp::AllReduce)],
              b.stats[s].groups.by_role[int(CommRole::Replica)].bytes[int(CommOp::AllReduce)]);
  }
  expect_links_predicted(model, many, b);
}

TEST(Mics, HierarchicalGatherIsBitwiseTheFlatGather) {
  const int W = world().comm->world_size();
  if (W < 4) GTEST_SKIP() << "needs a shard group spanning two nodes";
  const ModelConfig model = tiny_model(true);
  const RunResult flat = run_engine(model, mics_options(1, W, false), 3);
  const RunResult two_level = run_engine(model, mics_options(1, W, true), 3);
  EXPECT_EQ(two_level.losses, flat.losses);
  EXPECT_EQ(two_level.norms, flat.norms);
  EXPECT_EQ(two_level.summary.checksum, flat.summary.checksum);
  expect_links_predicted(model, mics_options(1, W, true), two_level);
  // The MPI communicator's flat all-gather over whole nodes is already two-level (each shard crosses
  // to every other node once): the hierarchical gather moves the same inter-node bytes, not fewer
  // (it saves them only against a ring, LinkModel::Kind::Ring).
  EXPECT_EQ(two_level.stats.back().comm_links.inter, flat.stats.back().comm_links.inter);
  for (const StepStats& st : two_level.stats) EXPECT_GT(st.groups.by_role[int(CommRole::Cross)].calls[int(CommOp::AllGather)], 0u);
}

// The memory plan's communicator row (EnginePlan::comm_buffer_bytes, found without building an engine)
// is what a built engine records for its communicators' working buffers, split groups included:
// flat stage 3, MiCS over a node and over the world with the two-level gather, and hpZ.
TEST(Mics, PlannedCommunicatorBuffersAreWhatTheEngineReserves) {
  const int W = world().comm->world_size();
  if (W < 4) GTEST_SKIP() << "needs two nodes of two ranks";
  const ModelConfig model = tiny_model(true);
  EngineOptions hpz = mics_options(1, 0, false);
  hpz.gather.hpz_partition_size = node_size();
  const std::pair<const char*, EngineOptions> cases[] = {{"flat", mics_options(1, 0, false)},
                                                         {"mics node", mics_options(1, node_size(), false)},
                                                         {"mics world two-level", mics_options(1, W, true)},
                                                         {"hpz", hpz}};
  uint64_t flat_bytes = 0;
  for (const auto& [name, o] : cases) {
    SCOPED_TRACE(name);
    const uint64_t planned = EnginePlan(model, o, EnginePlan::capabilities_of(*world().backend), world().comm->world_size(), world().comm->rank()).comm_buffer_bytes(*world().comm);
    Engine e(model, o, *world().backend, *world().comm);
    EXPECT_EQ(planned, e.ledger().current()[MemCategory::CommBuffers]);
    if (flat_bytes == 0) flat_bytes = planned;
    else EXPECT_GT(planned, flat_bytes) << "a split group reserves buffers of its own";
  }
}

}  // namespace
}  // namespace zt::test
