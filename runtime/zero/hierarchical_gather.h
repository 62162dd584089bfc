// HierarchicalGather: MiCS's two-level parameter all-gather (mics_hierarchical_params_gather) of a
// unit over a shard group of s ranks that spans m = s / n whole nodes. Shard-group rank i = j·n + l
// sits on the group's node j at local index l and holds shard i of the padded unit. Level one runs
// over the cross communicator (the group's m ranks of local index l, one per node): each receives
// shards l, l + n, ..., l + (m-1)·n, in place; level two over the node communicator (the node's n
// ranks): each receives every other local index's m shards, in place. Both are segment all-gathers
// straight into the unit's buffer, so the result is the flat gather's, bit for bit, while the
// inter-node links carry (m-1)/m of a 1/n part of the unit instead of the flat ring's crossings.
// The second level is issued when the first is waited (its input is the first's output).
#pragma once

#include "collectives/communicator.h"

namespace zt {

class HierarchicalGather {
 public:
  HierarchicalGather() = default;
  // cross: m ranks (this rank's place in it is its node j); node: n ranks (place l).
  HierarchicalGather(Communicator* cross, Communicator* node);
  bool on() const { return cross_ != nullptr; }

  // All-gathers a padded unit of `padded` elements into `full` (this rank's shard already at its
  // place i·padded/s), `element_bytes` each. The handle's wait() finishes both levels.
  CommHandlePtr gather_async(void* full, size_t padded, DType t, size_t element_bytes) const;

 private:
  Communicator* cross_ = nullptr;
  Communicator* node_ = nullptr;
};

}  // namespace zt
