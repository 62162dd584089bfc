// NodeTopology, GroupLayout and LinkModel: which node each rank sits on (ranks 0..n-1 on node 0,
// n..2n-1 on node 1, ...: node = rank / ranks_per_node), the rank groups hierarchical sharding builds
// from that (a node, the ranks of one local index across nodes, MiCS's shard and replica groups),
// how a group's members sit on nodes, and the bytes a collective over a group sends on intra-node
// and on inter-node links.
#pragma once

#include <cstdint>
#include <vector>

#include "collectives/communicator.h"

namespace zt {

struct NodeTopology {
  int world_size = 1;
  int ranks_per_node = 1;

  // Throws std::invalid_argument unless 1 <= ranks_per_node and it divides world_size.
  static NodeTopology make(int world_size, int ranks_per_node);
  int nodes() const { return world_size / ranks_per_node; }
  int node_of(int rank) const { return rank / ranks_per_node; }
  int local_of(int rank) const { return rank % ranks_per_node; }

  // Ascending world ranks. node_group: the ranks on rank's node. cross_group: the rank of the same
  // local index on every node. shard_group(s): the s consecutive ranks [s·⌊rank/s⌋, +s) holding one
  // copy of the sharded state (MiCS); replica_group(s): the ranks at rank's position in every shard
  // group, which hold the same shard. s must divide world_size (std::invalid_argument otherwise).
  std::vector<int> node_group(int rank) const;
  std::vector<int> cross_group(int rank) const;
  std::vector<int> shard_group(int rank, int s) const;
  std::vector<int> replica_group(int rank, int s) const;
  // Each rank's node, in rank order: what a communicator is told (Communicator::set_node_layout).
  std::vector<int> node_of_each_rank() const;
};

// Bytes sent on links between ranks of one node and on links between nodes.
struct LinkBytes {
  uint64_t intra = 0, inter = 0;
  uint64_t total() const { return intra + inter; }
  LinkBytes& operator+=(const LinkBytes& o) {
    intra += o.intra;
    inter += o.inter;
    return *this;
  }
};

// How the members of one group sit on nodes, from each member's node in group-rank order: the
// shape that decides how the MPI communicator runs a collective over the group (see LinkModel).
struct GroupLayout {
  int size = 1;      // members
  int nodes = 1;     // distinct nodes among them
  int per_node = 1;  // members on each node when every node holds as many, else 0
  bool contiguous = true;  // each node's members are consecutive group ranks
  static GroupLayout of(const std::vector<int>& node_of_member);
  // Two levels (inside each node, then across nodes with only what must cross): several nodes,
  // several members on each, as many on each, node-contiguous. Otherwise every byte goes straight
  // from the rank that has it to the rank that needs it.
  bool two_level() const { return nodes > 1 && per_node > 1 && contiguous; }
};

// The bytes a collective over a group of G ranks puts on each link class, summed over the whole
// job, for the algorithm the group's communicator runs. Of a call of A algorithm bytes
// (CommOpStats' count) on every member:
//   NodeAware (the MPI communicator, collectives/README.md "Across nodes"):
//     - a two-level group of N nodes of n: a reduce-scatter is reduced inside each node first, so
//       each node sends each other node only its partial sums of what that node owns: (N-1)·A
//       inter-node, N·(n-1)·A intra-node; an all-gather is the reverse (each shard crosses to every
//       other node once, then spreads inside it): the same; an all-reduce both: twice that; a
//       broadcast reaches one rank of every other node, then the rest inside each: the same as a
//       reduce-scatter;
//     - any other group: each rank sends straight to each peer (reduce-scatter, all-gather,
//       all-to-all: A/G to each; an all-reduce twice), so a byte crosses nodes exactly when its
//       two ranks' nodes differ: A/G · Σ over ranks of the peers on other nodes; a broadcast as above.
//     An all-to-all is always direct. Inside one node nothing crosses; with one rank per node all does.
//   Ring (NCCL, which builds node-contiguous rings): the group's ranks in ascending order form a
//     ring, hop i carries (G-1)/G · A of an all-gather, a reduce-scatter, a broadcast or an
//     all-to-all and 2(G-1)/G · A of an all-reduce, and a hop crosses when its two ranks' nodes differ.
// A barrier sends none. Every rank issues the same calls, so every rank computes the same job
// totals from its own counts. Counts that do not divide evenly make the real split differ by
// rounding only.
class LinkModel {
 public:
  enum class Kind { NodeAware, Ring };
  LinkModel() = default;  // a group of one: no links
  LinkModel(const NodeTopology& topology, const std::vector<int>& ranks, Kind kind = Kind::NodeAware);
  // Disjoint groups of one size that issue the same calls at once (hpZ's groups, one per node):
  // split() sums all of them, so the totals are still the whole job's.
  LinkModel(const NodeTopology& topology, const std::vector<std::vector<int>>& groups, Kind kind = Kind::NodeAware);

  int size() const { return size_; }
  Kind kind() const { return kind_; }
  // The job's bytes on each link class for calls of op totalling `algorithm_bytes` on every rank.
  LinkBytes split(CommOp op, uint64_t algorithm_bytes) const;
  // Σ over ops of split(op, bytes[op]).
  LinkBytes split(const uint64_t (&bytes)[kCommOpCount]) const;

 private:
  void add_group(const NodeTopology& t, const std::vector<int>& ranks);
  int size_ = 1;
  Kind kind_ = Kind::NodeAware;
  // Per op, the job's bytes per link class for A = size_ algorithm bytes on every rank (so that a
  // call's share is A · coefficient / size_, exact in integers), summed over the groups.
  uint64_t inter_[kCommOpCount] = {}, intra_[kCommOpCount] = {};
};

}  // namespace zt
