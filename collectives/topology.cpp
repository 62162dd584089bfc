// NodeTopology's groups, GroupLayout and LinkModel's arithmetic (see topology.h).
#include "collectives/topology.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>

namespace zt {

NodeTopology NodeTopology::make(int world_size, int ranks_per_node) {
  if (world_size < 1) throw std::invalid_argument("world size " + std::to_string(world_size) + " must be at least 1");
  if (ranks_per_node < 1 || world_size % ranks_per_node != 0)
    throw std::invalid_argument("ranks per node " + std::to_string(ranks_per_node) + " must be at least 1 and divide the world size " +
                                std::to_string(world_size));
  return NodeTopology{world_size, ranks_per_node};
}

static std::vector<int> strided(int first, int count, int stride) {
  std::vector<int> r(static_cast<size_t>(count), 0);
  for (int i = 0; i < count; ++i) r[size_t(i)] = first + i * stride;
  return r;
}

static void check_group_size(int world, int s) {
  if (s < 1 || world % s != 0)
    throw std::invalid_argument("group size " + std::to_string(s) + " must be at least 1 and divide the world size " +
                                std::to_string(world));
}

std::vector<int> NodeTopology::node_group(int rank) const {
  return strided(node_of(rank) * ranks_per_node, ranks_per_node, 1);
}

std::vector<int> NodeTopology::cross_group(int rank) const { return strided(local_of(rank), nodes(), ranks_per_node); }

std::vector<int> NodeTopology::shard_group(int rank, int s) const {
  check_group_size(world_size, s);
  return strided(rank / s * s, s, 1);
}

std::vector<int> NodeTopology::replica_group(int rank, int s) const {
  check_group_size(world_size, s);
  return strided(rank % s, world_size / s, s);
}

std::vector<int> NodeTopology::node_of_each_rank() const {
  std::vector<int> v(size_t(world_size), 0);
  for (int r = 0; r < world_size; ++r) v[size_t(r)] = node_of(r);
  return v;
}

GroupLayout GroupLayout::of(const std::vector<int>& node_of_member) {
  GroupLayout g;
  g.size = int(node_of_member.size());
  std::map<int, int> count;
  for (size_t i = 0; i < node_of_member.size(); ++i) {
    ++count[node_of_member[i]];
    // A node seen before, then another, then this one again: its members are not consecutive.
    if (i > 0 && node_of_member[i] != node_of_member[i - 1] && count[node_of_member[i]] > 1) g.contiguous = false;
  }
  g.nodes = std::max<int>(1, int(count.size()));
  g.per_node = count.empty() ? 1 : count.begin()->second;
  for (const auto& [node, c] : count)
    if (c != g.per_node) g.per_node = 0;
  return g;
}

LinkModel::LinkModel(const NodeTopology& t, const std::vector<int>& ranks, Kind kind)
    : size_(int(ranks.size())), kind_(kind) {
  add_group(t, ranks);
}

LinkModel::LinkModel(const NodeTopology& t, const std::vector<std::vector<int>>& groups, Kind kind) : kind_(kind) {
  if (groups.empty()) throw std::invalid_argument("LinkModel: no groups");
  size_ = int(groups[0].size());
  for (const auto& g : groups) {
    if (int(g.size()) != size_) throw std::invalid_argument("LinkModel: the groups must be of one size");
    add_group(t, g);
  }
}

void LinkModel::add_group(const NodeTopology& t, const std::vector<int>& ranks) {
  if (ranks.empty()) throw std::invalid_argument("LinkModel: a group needs at least one rank");
  std::vector<int> node(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    const int a = ranks[i];
    if (a < 0 || a >= t.world_size) throw std::invalid_argument("LinkModel: rank " + std::to_string(a) + " is outside the world");
    if (i > 0 && a <= ranks[i - 1]) throw std::invalid_argument("LinkModel: the group's ranks must ascend");
    node[i] = t.node_of(a);
  }
  const uint64_t G = ranks.size();
  if (G == 1) return;
  auto add = [&](CommOp op, uint64_t inter, uint64_t intra) {
    inter_[int(op)] += inter;
    intra_[int(op)] += intra;
  };
  // Direct sends: A/G from each rank to each peer; with A = G, one byte per (rank, peer) pair.
  uint64_t off = 0, same = 0;
  for (size_t p = 0; p < node.size(); ++p)
    for (size_t q = 0; q < node.size(); ++q)
      if (p != q) (node[p] == node[q] ? same : off) += 1;
  if (kind_ == Kind::Ring) {
    uint64_t crossing = 0;
    for (size_t i = 0; i < node.size(); ++i) crossing += node[i] != node[(i + 1) % node.size()];
    // Each hop carries (G-1)/G · A = G-1 bytes at A = G.
    for (CommOp op : {CommOp::ReduceScatter, CommOp::AllGather, CommOp::Broadcast, CommOp::AllToAll})
      add(op, (G - 1) * crossing, (G - 1) * (G - crossing));
    add(CommOp::AllReduce, 2 * (G - 1) * crossing, 2 * (G - 1) * (G - crossing));
    return;
  }
  const GroupLayout g = GroupLayout::of(node);
  add(CommOp::AllToAll, off, same);
  // A broadcast reaches one rank of every other node, then spreads inside each node: (nodes-1)·A
  // between nodes and (G-nodes)·A inside them, wherever the root is.
  add(CommOp::Broadcast, G * uint64_t(g.nodes - 1), G * (G - uint64_t(g.nodes)));
  if (g.two_level()) {
    const uint64_t N = uint64_t(g.nodes), n = uint64_t(g.per_node);
    for (CommOp op : {CommOp::ReduceScatter, CommOp::AllGather}) add(op, G * (N - 1), G * N * (n - 1));
    add(CommOp::AllReduce, 2 * G * (N - 1), 2 * G * N * (n - 1));
  } else {
    for (CommOp op : {CommOp::ReduceScatter, CommOp::AllGather}) add(op, off, same);
    add(CommOp::AllReduce, 2 * off, 2 * same);
  }
}

LinkBytes LinkModel::split(CommOp op, uint64_t algorithm_bytes) const {
  if (size_ <= 1) return {};
  using u128 = unsigned __int128;
  LinkBytes b;
  b.inter = uint64_t(u128(algorithm_bytes) * inter_[int(op)] / unsigned(size_));
  b.intra = uint64_t(u128(algorithm_bytes) * intra_[int(op)] / unsigned(size_));
  return b;
}

LinkBytes LinkModel::split(const uint64_t (&bytes)[kCommOpCount]) const {
  LinkBytes sum;
  for (int i = 0; i < kCommOpCount; ++i) sum += split(CommOp(i), bytes[i]);
  return sum;
}

}  // namespace zt
