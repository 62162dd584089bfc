// NodeTopology and LinkModel: which node each rank sits on (ranks 0..n-1 on node 0, n..2n-1 on node
// 1, ...: node = rank / ranks_per_node), the rank groups hierarchical sharding builds from that (a
// node, the ranks of one local index across nodes, MiCS's shard and replica groups), and the bytes
// a collective over a group sends on intra-node and on inter-node links.
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

// The bytes a collective over a group of G ranks puts on each link class, summed over the whole
// job, under the ring model: the group's ranks in ascending order form a ring (node-contiguous when
// the group spans nodes), hop i carries rank g[i]'s data to g[(i+1) % G], and a hop crosses a node
// boundary when the two ranks' nodes differ. Of a call of A algorithm bytes (CommOpStats' count)
// each hop carries (G-1)/G · A for an all-gather or a reduce-scatter, 2(G-1)/G · A for an
// all-reduce (reduce-scatter then all-gather) and (G-1)/G · A for a broadcast (a pipelined chain
// from the root: G-1 hops of A each, counted evenly over the ring's G hops); a barrier sends none.
// An all-to-all sends each rank's (G-1)/G · A straight to its peers: the job total is the same as
// the ring's, and so is the split for the groups qgZ uses (inside one node: all intra; one rank per
// node: all inter); for a group mixing both the ring's split is the model's approximation.
// So a flat collective over the world with N = W/n nodes crosses nodes on N of its W hops, and a
// group inside one node sends nothing between nodes. Every rank issues the same calls, so every
// rank computes the same job totals from its own counts. Real libraries choose trees and
// hierarchical rings; this is the model the predictor and the measurement share, not a capture.
class LinkModel {
 public:
  LinkModel() = default;  // a group of one: no links
  LinkModel(const NodeTopology& topology, const std::vector<int>& ranks);
  // Disjoint groups of one size that issue the same calls at once (hpZ's groups, one per node):
  // split() sums the rings of all of them, so the totals are still the whole job's.
  LinkModel(const NodeTopology& topology, const std::vector<std::vector<int>>& groups);

  int size() const { return size_; }
  int crossing_hops() const { return crossing_; }  // over every group's ring
  int hops() const { return hops_; }
  // The job's bytes on each link class for calls of op totalling `algorithm_bytes` on every rank.
  LinkBytes split(CommOp op, uint64_t algorithm_bytes) const;
  // Σ over ops of split(op, bytes[op]).
  LinkBytes split(const uint64_t (&bytes)[kCommOpCount]) const;

 private:
  void add_ring(const NodeTopology& t, const std::vector<int>& ranks);
  int size_ = 1, crossing_ = 0, hops_ = 0;
};

}  // namespace zt
