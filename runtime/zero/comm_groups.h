// CommGroups: the communicators one engine's ZeRO objects run on, split from the world once at
// setup, each with the link model of all its instances (every instance of a group issues the same
// calls at once, so the job's bytes per link class follow from one rank's counts):
//   world      every rank: the step's loss, evaluation sums;
//   shard      the ranks the partition spans: the world, or MiCS's group of mics_shard_size
//              consecutive ranks (one copy of the sharded model states);
//   replica    MiCS: the ranks at the same place in every shard group (they hold the same shard),
//              which all-reduce the gradient shards at the accumulation boundary;
//   secondary  hpZ: zero_hpz_partition_size consecutive ranks, gathering the secondary slices;
//   cross, node  MiCS's hierarchical gather inside a shard group that spans nodes: the group's
//              ranks of one local index (one per node), then the group's ranks on one node; or
//              qgZ's two all-to-alls over the world (the ranks of one local index on every node,
//              the ranks of one node). The two never run together.
// A group that would equal the world, or hold one rank, is not split (shard() is the world;
// the others are null), except that a MiCS shard group is always its own communicator.
#pragma once

#include <memory>
#include <vector>

#include "collectives/communicator.h"
#include "collectives/topology.h"

namespace zt {

enum class CommRole { World, Shard, Replica, Secondary, Cross, Node };
inline constexpr int kCommRoleCount = 6;
const char* comm_role_name(CommRole r);  // "world", "shard", "replica", "secondary", "cross", "node"

// The group sizes a run asks for (0 or 1: that group is off).
struct CommGroupShape {
  int mics_shard_size = 0;   // stage 3 MiCS
  bool mics_hierarchical = false;
  int hpz_partition_size = 0;  // stage 3 hpZ
  bool quantized_gradients = false;  // stage 3 qgZ (not with MiCS): cross and node over the world
};

// One group's calls and algorithm bytes per op over a span of time (a step).
struct GroupTraffic {
  uint64_t bytes[kCommOpCount] = {};
  uint64_t calls[kCommOpCount] = {};
};

struct StepTraffic {
  GroupTraffic total;                       // every group's calls, added
  GroupTraffic by_role[kCommRoleCount];     // each group's (shard: zero when it is the world)
  LinkBytes links;                          // the job's bytes per link class, every group included
};

class CommGroups {
 public:
  // Collective over `world` (the splits). `stream`: the backend's native stream, for NCCL.
  CommGroups(Communicator& world, const NodeTopology& topology, const CommGroupShape& shape, void* stream);
  ~CommGroups();
  CommGroups(const CommGroups&) = delete;
  CommGroups& operator=(const CommGroups&) = delete;

  Communicator& world() const { return world_; }
  Communicator& shard() const { return *at(CommRole::Shard); }
  // Null when the run has no such group.
  Communicator* replica() const { return at(CommRole::Replica); }
  Communicator* secondary() const { return at(CommRole::Secondary); }
  Communicator* cross() const { return at(CommRole::Cross); }
  Communicator* node() const { return at(CommRole::Node); }
  bool mics() const { return mics_; }
  bool quantizes_gradients() const { return qgz_; }  // cross and node are qgZ's hops
  const LinkModel& links(CommRole r) const { return members_[size_t(r)].links; }

  // Every group's counters now, and the step's traffic since such a snapshot.
  std::vector<CommStats> snapshot() const;
  StepTraffic since(const std::vector<CommStats>& before) const;
  // The job's bytes per link class for calls of `bytes` per op on group `r`.
  LinkBytes split(CommRole r, const uint64_t (&bytes)[kCommOpCount]) const { return links(r).split(bytes); }

  // Working buffers sized for the largest call each group makes: the shard group's (the world's
  // when it is the shard group; under MiCS the world carries a few doubles) and the other groups'.
  void reserve_buffers(uint64_t shard_call_bytes, uint64_t group_call_bytes);
  uint64_t group_buffer_bytes() const;  // the split groups' (the world's is comm.buffer_bytes())
  // What reserve_buffers would hold in all (the world's and every group's) for groups of `shape`
  // split from `world`, found without splitting (the memory plan's communicator row).
  static uint64_t planned_buffer_bytes(const Communicator& world, const CommGroupShape& shape,
                                       uint64_t shard_call_bytes, uint64_t group_call_bytes);
  void set_compute_stream(void* stream);

 private:
  struct Member {
    Communicator* comm = nullptr;        // null: no such group
    std::unique_ptr<Communicator> owned;  // when split from the world
    LinkModel links;
  };
  Communicator* at(CommRole r) const { return members_[size_t(r)].comm; }
  void add(CommRole r, int group_size, const std::vector<std::vector<int>>& groups, int color, int key);

  Communicator& world_;
  NodeTopology topology_;
  bool mics_ = false;
  bool qgz_ = false;  // cross and node are qgZ's (they reserve no working buffers)
  LinkModel::Kind kind_ = LinkModel::Kind::NodeAware;  // what the world's collectives run
  std::vector<Member> members_;
};

}  // namespace zt
