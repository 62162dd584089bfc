// NodeTopology's groups for every world size, ranks per node and MiCS group size up to 16, and the
// ring model's bytes per link class on cases worked by hand.
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>

#include "collectives/topology.h"

namespace zt {
namespace {

TEST(NodeTopology, RefusesRanksPerNodeThatDoNotDivideTheWorld) {
  EXPECT_THROW(NodeTopology::make(8, 3), std::invalid_argument);
  EXPECT_THROW(NodeTopology::make(8, 0), std::invalid_argument);
  EXPECT_THROW(NodeTopology::make(0, 1), std::invalid_argument);
  EXPECT_THROW(NodeTopology::make(8, 4).shard_group(0, 3), std::invalid_argument);
  EXPECT_EQ(NodeTopology::make(8, 4).nodes(), 2);
}

// Every group is the same set seen from each of its members, the groups of one kind partition the
// world, and each kind has its defining property.
TEST(NodeTopology, GroupsPartitionTheWorldForEveryShape) {
  for (int W = 1; W <= 16; ++W)
    for (int n = 1; n <= W; ++n) {
      if (W % n) continue;
      const NodeTopology t = NodeTopology::make(W, n);
      for (int r = 0; r < W; ++r) {
        const auto node = t.node_group(r), cross = t.cross_group(r);
        ASSERT_EQ(int(node.size()), n);
        ASSERT_EQ(int(cross.size()), W / n);
        for (int m : node) {
          EXPECT_EQ(t.node_of(m), t.node_of(r));
          EXPECT_EQ(t.node_group(m), node);
        }
        std::set<int> nodes_seen;
        for (int m : cross) {
          EXPECT_EQ(t.local_of(m), t.local_of(r));
          EXPECT_EQ(t.cross_group(m), cross);
          nodes_seen.insert(t.node_of(m));
        }
        EXPECT_EQ(int(nodes_seen.size()), W / n) << "one rank of every node";
        std::set<int> a(node.begin(), node.end()), b(cross.begin(), cross.end());
        EXPECT_TRUE(a.count(r) && b.count(r));
        for (int s = 1; s <= W; ++s) {
          if (W % s) continue;
          const auto shard = t.shard_group(r, s), rep = t.replica_group(r, s);
          ASSERT_EQ(int(shard.size()), s);
          ASSERT_EQ(int(rep.size()), W / s);
          for (size_t i = 0; i < shard.size(); ++i) {
            EXPECT_EQ(shard[i], shard[0] + int(i)) << "consecutive ranks";
            EXPECT_EQ(t.shard_group(shard[i], s), shard);
          }
          for (int m : rep) {
            EXPECT_EQ(m % s, r % s) << "the same position in each shard group";
            EXPECT_EQ(t.replica_group(m, s), rep);
          }
          // One member of the replica group in each shard group: they cross exactly once.
          int common = 0;
          for (int m : rep) common += (m / s == r / s);
          EXPECT_EQ(common, 1);
        }
      }
    }
}

TEST(LinkModel, FlatRingCrossesOnceForEveryNodeAndGroupsInsideANodeNever) {
  for (int W = 1; W <= 16; ++W)
    for (int n = 1; n <= W; ++n) {
      if (W % n) continue;
      const NodeTopology t = NodeTopology::make(W, n);
      std::vector<int> all(static_cast<size_t>(W), 0);
      for (int r = 0; r < W; ++r) all[size_t(r)] = r;
      const int N = t.nodes();
      EXPECT_EQ(LinkModel(t, all).crossing_hops(), N > 1 ? N : 0) << W << " " << n;
      EXPECT_EQ(LinkModel(t, t.node_group(0)).crossing_hops(), 0);
      EXPECT_EQ(LinkModel(t, t.cross_group(0)).crossing_hops(), N > 1 ? N : 0);
    }
}

TEST(LinkModel, BytesPerLinkClassOnWorkedCases) {
  const NodeTopology t = NodeTopology::make(8, 4);
  const LinkModel world(t, {0, 1, 2, 3, 4, 5, 6, 7});
  // An all-gather of 800 bytes: each of the 8 hops carries 7/8 of it (700): hops 3→4 and 7→0 cross.
  LinkBytes ag = world.split(CommOp::AllGather, 800);
  EXPECT_EQ(ag.inter, 1400u);
  EXPECT_EQ(ag.intra, 4200u);
  const LinkBytes rs = world.split(CommOp::ReduceScatter, 800);
  EXPECT_EQ(rs.inter, ag.inter);
  EXPECT_EQ(rs.intra, ag.intra);
  const LinkBytes ar = world.split(CommOp::AllReduce, 800);
  EXPECT_EQ(ar.inter, 2800u) << "reduce-scatter then all-gather";
  EXPECT_EQ(ar.intra, 8400u);
  EXPECT_EQ(world.split(CommOp::Barrier, 0).total(), 0u);
  EXPECT_EQ(world.split(CommOp::Broadcast, 800).total(), 7u * 800u) << "a chain of 7 hops of the whole buffer";
  // The node group sends nothing between nodes; the cross group (0, 4) only between them.
  const LinkBytes node = LinkModel(t, t.node_group(5)).split(CommOp::AllGather, 800);
  EXPECT_EQ(node.inter, 0u);
  EXPECT_EQ(node.intra, 4u * 600u);
  const LinkBytes cross = LinkModel(t, t.cross_group(5)).split(CommOp::AllGather, 800);
  EXPECT_EQ(cross.intra, 0u);
  EXPECT_EQ(cross.inter, 2u * 400u);
  // Every node's group at once (hpZ): both rings counted, the job's total.
  const LinkModel both(t, std::vector<std::vector<int>>{t.node_group(0), t.node_group(4)});
  EXPECT_EQ(both.hops(), 8);
  EXPECT_EQ(both.split(CommOp::AllGather, 800).intra, 8u * 600u);
  EXPECT_EQ(both.split(CommOp::AllGather, 800).inter, 0u);
  const LinkModel crosses(t, std::vector<std::vector<int>>{t.cross_group(0), t.cross_group(1), t.cross_group(2), t.cross_group(3)});
  EXPECT_EQ(crosses.split(CommOp::AllGather, 800).inter, 8u * 400u);
  EXPECT_THROW(LinkModel(t, std::vector<std::vector<int>>{{0, 1}, {2, 3, 4}}), std::invalid_argument);
  // One rank, or one node: nothing crosses.
  EXPECT_EQ(LinkModel().split(CommOp::AllReduce, 800).total(), 0u);
  const NodeTopology one = NodeTopology::make(4, 4);
  EXPECT_EQ(LinkModel(one, {0, 1, 2, 3}).split(CommOp::AllGather, 800).inter, 0u);
  uint64_t by_op[kCommOpCount] = {};
  by_op[int(CommOp::AllGather)] = 800;
  by_op[int(CommOp::AllReduce)] = 800;
  const LinkBytes sum = world.split(by_op);
  EXPECT_EQ(sum.inter, ag.inter + ar.inter);
  EXPECT_EQ(sum.intra, ag.intra + ar.intra);
  EXPECT_THROW(LinkModel(t, {3, 1}), std::invalid_argument);
  EXPECT_THROW(LinkModel(t, {0, 9}), std::invalid_argument);
}

}  // namespace
}  // namespace zt
