// StageTraits: which model states a ZeRO stage shards across the data-parallel ranks — optimizer
// state from stage 1, gradients from stage 2, parameters at stage 3 — and the divisor each state's
// bytes per rank get at a world size. The one place this rule is written: the Partition (per unit)
// and the memory plan (per category, without a model) both read it.
#pragma once

namespace zt {

struct StageTraits {
  bool shards_optimizer = false;  // master weights and moments: each rank keeps its shard
  bool shards_grads = false;      // accumulated gradients: each rank keeps its shard
  bool shards_params = false;     // working parameters: each rank keeps its shard, gathered for compute

  // The divisor of one state's bytes per rank: the world size where the stage shards it, else 1.
  static double divisor(bool sharded, int world_size) { return sharded && world_size > 1 ? double(world_size) : 1.0; }
  double optimizer_divisor(int world_size) const { return divisor(shards_optimizer, world_size); }
  double grad_divisor(int world_size) const { return divisor(shards_grads, world_size); }
  double param_divisor(int world_size) const { return divisor(shards_params, world_size); }
};

// The caller validates the stage (0..3); a larger number reads as stage 3's rule.
inline StageTraits stage_traits(int stage) {
  return StageTraits{stage >= 1, stage >= 2, stage >= 3};
}

}  // namespace zt
