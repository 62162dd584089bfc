// NodeTopology's groups and LinkModel's ring arithmetic (see topology.h).
#include "collectives/topology.h"

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

LinkModel::LinkModel(const NodeTopology& t, const std::vector<int>& ranks) : size_(int(ranks.size())) {
  add_ring(t, ranks);
}

LinkModel::LinkModel(const NodeTopology& t, const std::vector<std::vector<int>>& groups) {
  if (groups.empty()) throw std::invalid_argument("LinkModel: no groups");
  size_ = int(groups[0].size());
  for (const auto& g : groups) {
    if (int(g.size()) != size_) throw std::invalid_argument("LinkModel: the groups must be of one size");
    add_ring(t, g);
  }
}

void LinkModel::add_ring(const NodeTopology& t, const std::vector<int>& ranks) {
  if (ranks.empty()) throw std::invalid_argument("LinkModel: a group needs at least one rank");
  if (ranks.size() > 1) hops_ += int(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    const int a = ranks[i], b = ranks[(i + 1) % ranks.size()];
    if (a < 0 || a >= t.world_size) throw std::invalid_argument("LinkModel: rank " + std::to_string(a) + " is outside the world");
    if (i + 1 < ranks.size() && b <= a) throw std::invalid_argument("LinkModel: the group's ranks must ascend");
    if (ranks.size() > 1 && t.node_of(a) != t.node_of(b)) ++crossing_;
  }
}

LinkBytes LinkModel::split(CommOp op, uint64_t algorithm_bytes) const {
  if (size_ <= 1 || op == CommOp::Barrier) return {};
  const unsigned __int128 per_hop_x_g = (unsigned __int128)algorithm_bytes * unsigned(size_ - 1) * (op == CommOp::AllReduce ? 2u : 1u);
  LinkBytes b;
  b.inter = uint64_t(per_hop_x_g * unsigned(crossing_) / unsigned(size_));
  b.intra = uint64_t(per_hop_x_g * unsigned(hops_ - crossing_) / unsigned(size_));
  return b;
}

LinkBytes LinkModel::split(const uint64_t (&bytes)[kCommOpCount]) const {
  LinkBytes sum;
  for (int i = 0; i < kCommOpCount; ++i) sum += split(CommOp(i), bytes[i]);
  return sum;
}

}  // namespace zt
