// CommGroups: the splits, in one order every rank follows, and the step's traffic per group.
#include "runtime/zero/comm_groups.h"

#include <stdexcept>
#include <string>

namespace zt {

const char* comm_role_name(CommRole r) {
  switch (r) {
    case CommRole::World: return "world";
    case CommRole::Shard: return "shard";
    case CommRole::Replica: return "replica";
    case CommRole::Secondary: return "secondary";
    case CommRole::Cross: return "cross";
    case CommRole::Node: return "node";
  }
  return "?";
}

namespace {

std::vector<int> ascending(int first, int count, int stride) {
  std::vector<int> g;
  for (int i = 0; i < count; ++i) g.push_back(first + i * stride);
  return g;
}

// The world's largest call: the shard group's, or under MiCS the step's few doubles (the loss,
// evaluation sums).
uint64_t world_call_bytes(bool mics, int world_size, uint64_t shard_call_bytes) {
  return mics ? uint64_t(world_size) * 64 : shard_call_bytes;
}

}  // namespace

CommGroups::CommGroups(Communicator& world, const NodeTopology& topology, const CommGroupShape& shape, void* stream)
    : world_(world), topology_(topology), members_(size_t(kCommRoleCount)) {
  const int W = world.world_size(), rank = world.rank(), n = topology.ranks_per_node;
  if (topology.world_size != W)
    throw std::invalid_argument("CommGroups: the topology has " + std::to_string(topology.world_size) +
                                " ranks, the world " + std::to_string(W));
  // The world learns where its ranks sit (the groups split below inherit it); the link model counts
  // the algorithm its collectives then run.
  world.set_node_layout(topology.node_of_each_rank());
  kind_ = world.node_aware() ? LinkModel::Kind::NodeAware : LinkModel::Kind::Ring;
  members_[size_t(CommRole::World)] = Member{&world, nullptr, LinkModel(topology, ascending(0, W, 1), kind_)};
  const int s = shape.mics_shard_size;
  mics_ = s > 0 && W > 1;
  if (mics_ && W % s != 0)
    throw std::invalid_argument("mics_shard_size " + std::to_string(s) + " must divide the world size " +
                                std::to_string(W));
  // Splits are collective: every rank makes the same ones in this order.
  if (mics_) {
    std::vector<std::vector<int>> shards, replicas;
    for (int first = 0; first < W; first += s) shards.push_back(ascending(first, s, 1));
    for (int place = 0; place < s; ++place) replicas.push_back(ascending(place, W / s, s));
    add(CommRole::Shard, s, shards, rank / s, rank);
    if (W / s > 1) add(CommRole::Replica, W / s, replicas, rank % s, rank);
    if (shape.mics_hierarchical) {
      if (!(n > 1 && s > n && s % n == 0))
        throw std::invalid_argument("mics_hierarchical_params_gather needs shard groups of whole nodes spanning "
                                    "more than one (mics_shard_size " + std::to_string(s) + ", " +
                                    std::to_string(n) + " ranks per node)");
      std::vector<std::vector<int>> crosses, nodes;
      for (int first = 0; first < W; first += s)
        for (int local = 0; local < n; ++local) crosses.push_back(ascending(first + local, s / n, n));
      for (int first = 0; first < W; first += n) nodes.push_back(ascending(first, n, 1));
      add(CommRole::Cross, s / n, crosses, (rank / s) * n + rank % n, rank);
      add(CommRole::Node, n, nodes, rank / n, rank);
    }
  } else {
    members_[size_t(CommRole::Shard)] = Member{&world, nullptr, members_[size_t(CommRole::World)].links};
    qgz_ = shape.quantized_gradients && W / n > 1;
    if (qgz_) {  // qgZ over more than one node
      std::vector<std::vector<int>> crosses, nodes;
      for (int local = 0; local < n; ++local) crosses.push_back(ascending(local, W / n, n));
      for (int first = 0; first < W; first += n) nodes.push_back(ascending(first, n, 1));
      add(CommRole::Cross, W / n, crosses, rank % n, rank);
      if (n > 1) add(CommRole::Node, n, nodes, rank / n, rank);
    }
  }
  const int hpz = shape.hpz_partition_size;
  if (hpz > 1 && W > 1) {
    if (W % hpz != 0)
      throw std::invalid_argument("zero_hpz_partition_size " + std::to_string(hpz) + " must divide the world size " +
                                  std::to_string(W));
    std::vector<std::vector<int>> groups;
    for (int first = 0; first < W; first += hpz) groups.push_back(ascending(first, hpz, 1));
    add(CommRole::Secondary, hpz, groups, rank / hpz, rank);
  }
  set_compute_stream(stream);
}

CommGroups::~CommGroups() { set_compute_stream(nullptr); }

void CommGroups::add(CommRole r, int group_size, const std::vector<std::vector<int>>& groups, int color, int key) {
  Member& m = members_[size_t(r)];
  m.owned = world_.split(color, key);
  if (m.owned->world_size() != group_size)
    throw std::logic_error(std::string("CommGroups: the ") + comm_role_name(r) + " group has " +
                           std::to_string(m.owned->world_size()) + " ranks, expected " + std::to_string(group_size));
  m.comm = m.owned.get();
  m.links = LinkModel(topology_, groups, kind_);
}

std::vector<CommStats> CommGroups::snapshot() const {
  std::vector<CommStats> out(members_.size());
  for (size_t r = 0; r < members_.size(); ++r)
    if (members_[r].comm && (r == size_t(CommRole::World) || members_[r].owned)) out[r] = members_[r].comm->stats();
  return out;
}

StepTraffic CommGroups::since(const std::vector<CommStats>& before) const {
  const std::vector<CommStats> now = snapshot();
  StepTraffic t;
  for (size_t r = 0; r < members_.size(); ++r) {
    if (!members_[r].comm || (r != size_t(CommRole::World) && !members_[r].owned)) continue;  // the world, counted once
    GroupTraffic& g = t.by_role[r];
    for (int i = 0; i < kCommOpCount; ++i) {
      g.bytes[i] = now[r].op[i].bytes - before[r].op[i].bytes;
      g.calls[i] = now[r].op[i].calls - before[r].op[i].calls;
      t.total.bytes[i] += g.bytes[i];
      t.total.calls[i] += g.calls[i];
    }
    t.links += members_[r].links.split(g.bytes);
  }
  return t;
}

void CommGroups::reserve_buffers(uint64_t shard_call_bytes, uint64_t group_call_bytes) {
  world_.reserve_buffers(world_call_bytes(mics_, world_.world_size(), shard_call_bytes));
  for (size_t r = 0; r < members_.size(); ++r) {
    if (!members_[r].owned) continue;
    if (qgz_ && (r == size_t(CommRole::Cross) || r == size_t(CommRole::Node))) continue;  // all-to-all only: no buffers
    members_[r].owned->reserve_buffers(r == size_t(CommRole::Shard) ? shard_call_bytes : group_call_bytes);
  }
}

uint64_t CommGroups::planned_buffer_bytes(const Communicator& world, const CommGroupShape& shape,
                                          uint64_t shard_call_bytes, uint64_t group_call_bytes) {
  const int W = world.world_size(), s = shape.mics_shard_size;
  const bool mics = s > 0 && W > 1;
  uint64_t b = world.buffer_bytes_for(world_call_bytes(mics, W, shard_call_bytes));
  if (mics) {
    b += world.buffer_bytes_for(shard_call_bytes);                                   // shard
    if (W / s > 1) b += world.buffer_bytes_for(group_call_bytes);                    // replica
    if (shape.mics_hierarchical) b += 2 * world.buffer_bytes_for(group_call_bytes);  // cross, node
  }
  if (shape.hpz_partition_size > 1 && W > 1) b += world.buffer_bytes_for(group_call_bytes);  // secondary
  // qgZ's groups only all-to-all, which moves the caller's buffers: they reserve none.
  return b;
}

uint64_t CommGroups::group_buffer_bytes() const {
  uint64_t b = 0;
  for (const Member& m : members_)
    if (m.owned) b += m.owned->buffer_bytes();
  return b;
}

void CommGroups::set_compute_stream(void* stream) {
  for (const Member& m : members_)
    if (m.comm) m.comm->set_compute_stream(stream);
}

}  // namespace zt
