// NodeTopology's groups for every world size, ranks per node and MiCS group size up to 16, how a
// group sits on nodes, and the link model's bytes per link class (the MPI communicator's two-level
// and direct algorithms, NCCL's rings) on cases worked by hand.
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

// NCCL's rings: a flat ring over the world crosses once per node boundary, N of its W hops.
TEST(LinkModel, RingCrossesOnceForEveryNodeAndGroupsInsideANodeNever) {
  const auto ring = LinkModel::Kind::Ring;
  for (int W = 1; W <= 16; ++W)
    for (int n = 1; n <= W; ++n) {
      if (W % n) continue;
      const NodeTopology t = NodeTopology::make(W, n);
      std::vector<int> all(static_cast<size_t>(W), 0);
      for (int r = 0; r < W; ++r) all[size_t(r)] = r;
      const uint64_t N = uint64_t(t.nodes()), A = uint64_t(W) * 1000;
      const LinkBytes b = LinkModel(t, all, ring).split(CommOp::AllGather, A);
      EXPECT_EQ(b.inter, W > 1 && N > 1 ? N * (A / uint64_t(W)) * uint64_t(W - 1) : 0u) << W << " " << n;
      EXPECT_EQ(b.total(), W > 1 ? uint64_t(W - 1) * A : 0u);
      EXPECT_EQ(LinkModel(t, t.node_group(0), ring).split(CommOp::AllGather, A).inter, 0u);
    }
}

TEST(LinkModel, RingBytesPerLinkClassOnWorkedCases) {
  const auto ring = LinkModel::Kind::Ring;
  const NodeTopology t = NodeTopology::make(8, 4);
  const LinkModel world(t, {0, 1, 2, 3, 4, 5, 6, 7}, ring);
  // An all-gather of 800 bytes: each of the 8 hops carries 7/8 of it (700): hops 3→4 and 7→0 cross.
  LinkBytes ag = world.split(CommOp::AllGather, 800);
  EXPECT_EQ(ag.inter, 1400u);
  EXPECT_EQ(ag.intra, 4200u);
  const LinkBytes ar = world.split(CommOp::AllReduce, 800);
  EXPECT_EQ(ar.inter, 2800u) << "reduce-scatter then all-gather";
  EXPECT_EQ(ar.intra, 8400u);
  EXPECT_EQ(world.split(CommOp::Broadcast, 800).total(), 7u * 800u) << "a chain of 7 hops of the whole buffer";
  const LinkModel both(t, std::vector<std::vector<int>>{t.node_group(0), t.node_group(4)}, ring);
  EXPECT_EQ(both.split(CommOp::AllGather, 800).intra, 8u * 600u);
  EXPECT_EQ(both.split(CommOp::AllGather, 800).inter, 0u);
}

// The MPI communicator's algorithms: two levels over whole nodes, direct sends otherwise.
TEST(LinkModel, NodeAwareBytesPerLinkClassOnWorkedCases) {
  const NodeTopology t = NodeTopology::make(8, 4);
  const LinkModel world(t, {0, 1, 2, 3, 4, 5, 6, 7});
  EXPECT_EQ(world.kind(), LinkModel::Kind::NodeAware);
  // A reduce-scatter of 800 bytes over 2 nodes of 4: each node sends the other only its partial sums
  // of the other node's 4 shards (400 bytes): 800 cross in all, against the ring's 1400. Inside each
  // node every rank sends each of 3 peers its column (2 shards of 100): 4 · 3 · 200 · 2 nodes = 4800.
  const LinkBytes rs = world.split(CommOp::ReduceScatter, 800);
  EXPECT_EQ(rs.inter, 800u);
  EXPECT_EQ(rs.intra, 4800u);
  EXPECT_EQ(rs.total(), 7u * 800u) << "every rank still receives 7/8 of the buffer";
  const LinkBytes ag = world.split(CommOp::AllGather, 800);
  EXPECT_EQ(ag.inter, rs.inter);
  EXPECT_EQ(ag.intra, rs.intra);
  const LinkBytes ar = world.split(CommOp::AllReduce, 800);
  EXPECT_EQ(ar.inter, 1600u);
  EXPECT_EQ(ar.intra, 9600u);
  // A broadcast reaches the other node once, then the 3 other ranks of each node.
  const LinkBytes bc = world.split(CommOp::Broadcast, 800);
  EXPECT_EQ(bc.inter, 800u);
  EXPECT_EQ(bc.intra, 6u * 800u);
  // An all-to-all is direct: each rank sends 100 to each of 4 ranks on the other node, 3 on its own.
  const LinkBytes a2a = world.split(CommOp::AllToAll, 800);
  EXPECT_EQ(a2a.inter, 8u * 4u * 100u);
  EXPECT_EQ(a2a.intra, 8u * 3u * 100u);
  EXPECT_EQ(world.split(CommOp::Barrier, 0).total(), 0u);
  // Inside one node nothing crosses; with one rank per node everything does (as the ring).
  const LinkBytes node = LinkModel(t, t.node_group(5)).split(CommOp::AllGather, 800);
  EXPECT_EQ(node.inter, 0u);
  EXPECT_EQ(node.intra, 4u * 600u);
  const LinkBytes cross = LinkModel(t, t.cross_group(5)).split(CommOp::AllGather, 800);
  EXPECT_EQ(cross.intra, 0u);
  EXPECT_EQ(cross.inter, 2u * 400u);
  const LinkModel crosses(t, std::vector<std::vector<int>>{t.cross_group(0), t.cross_group(1), t.cross_group(2), t.cross_group(3)});
  EXPECT_EQ(crosses.split(CommOp::AllGather, 800).inter, 8u * 400u);
  EXPECT_THROW(LinkModel(t, std::vector<std::vector<int>>{{0, 1}, {2, 3, 4}}), std::invalid_argument);
  // A group of 6 over 2 nodes, 4 on one and 2 on the other (no two levels): direct sends. Each rank
  // sends A/6 to each peer; the 4 send to 2 peers off their node, the 2 to 4: 16 pairs cross.
  const NodeTopology t4 = NodeTopology::make(12, 4);
  const LinkBytes mixed = LinkModel(t4, {2, 3, 4, 5, 6, 7}).split(CommOp::ReduceScatter, 600);
  EXPECT_EQ(mixed.inter, 100u * 16u);
  EXPECT_EQ(mixed.intra, 100u * 14u);
  EXPECT_EQ(LinkModel().split(CommOp::AllReduce, 800).total(), 0u);
  uint64_t by_op[kCommOpCount] = {};
  by_op[int(CommOp::AllGather)] = 800;
  by_op[int(CommOp::AllReduce)] = 800;
  const LinkBytes sum = world.split(by_op);
  EXPECT_EQ(sum.inter, ag.inter + ar.inter);
  EXPECT_EQ(sum.intra, ag.intra + ar.intra);
  EXPECT_THROW(LinkModel(t, {3, 1}), std::invalid_argument);
  EXPECT_THROW(LinkModel(t, {0, 9}), std::invalid_argument);
}

// Two levels exactly when several nodes each hold as many consecutive members, more than one.
TEST(GroupLayout, TwoLevelsOnlyOverWholeEqualNodes) {
  EXPECT_TRUE(GroupLayout::of({0, 0, 1, 1}).two_level());
  EXPECT_TRUE(GroupLayout::of({5, 5, 5, 2, 2, 2}).two_level());
  EXPECT_FALSE(GroupLayout::of({0, 0, 0, 0}).two_level()) << "one node";
  EXPECT_FALSE(GroupLayout::of({0, 1, 2}).two_level()) << "one rank per node";
  EXPECT_FALSE(GroupLayout::of({0, 0, 0, 1}).two_level()) << "unequal nodes";
  EXPECT_FALSE(GroupLayout::of({0, 1, 0, 1}).two_level()) << "not node-contiguous";
  const GroupLayout g = GroupLayout::of({3, 3, 7, 7, 9, 9});
  EXPECT_EQ(g.nodes, 3);
  EXPECT_EQ(g.per_node, 2);
  EXPECT_EQ(GroupLayout::of({0, 0, 1}).per_node, 0);
}

}  // namespace
}  // namespace zt
