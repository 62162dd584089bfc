// StageTraits: what a ZeRO stage does, as the one place its number is read — which model states it
// shards across the data-parallel ranks (optimizer state from stage 1, gradients from stage 2,
// parameters at stage 3), the divisor each state's bytes per rank get at a world size, and the rules
// that follow from those three (all-reduce at stage 0, stage 3's gathers for compute and the
// features built on them, stages 1-2's gather of the updated shards, stage 1's full gradients). The
// Partition, the memory plan, config validation, the engine plan and the reports read it; no other
// file compares a stage number.
#pragma once

namespace zt {

inline constexpr int kMaxZeroStage = 3;

// Whether a number is a ZeRO stage (0..3): validation reports any other.
constexpr bool is_zero_stage(long long stage) { return stage >= 0 && stage <= kMaxZeroStage; }

struct StageTraits {
  bool shards_optimizer = false;  // master weights and moments: each rank keeps its shard
  bool shards_grads = false;      // accumulated gradients: each rank keeps its shard
  bool shards_params = false;     // working parameters: each rank keeps its shard, gathered for compute

  // The divisor of one state's bytes per rank: the world size where the stage shards it, else 1.
  static double divisor(bool sharded, int world_size) { return sharded && world_size > 1 ? double(world_size) : 1.0; }
  double optimizer_divisor(int world_size) const { return divisor(shards_optimizer, world_size); }
  double grad_divisor(int world_size) const { return divisor(shards_grads, world_size); }
  double param_divisor(int world_size) const { return divisor(shards_params, world_size); }

  // Stage 0: nothing is sharded, gradients are all-reduced; the loss scaler is DeepSpeed's
  // FP16_Optimizer's rather than the ZeRO optimizer's; optimizer offload has nothing to move.
  bool all_reduces_grads() const { return !shards_optimizer; }
  // Stage 3: parameters are gathered for compute — the home of parameter offload, the stage-3
  // buckets and persistence, hpZ, MiCS, qwZ and qgZ.
  bool gathers_params() const { return shards_params; }
  // Stages 1-2: every rank's updated shard is all-gathered into the full parameters after the step
  // (in allgather_bucket_size buckets); the shard sits inside the full parameter buffer.
  bool gathers_updated_shards() const { return shards_optimizer && !shards_params; }
  // Stage 1: the optimizer state is sharded but every rank keeps full gradients, its shard's inside them.
  bool full_grads_with_sharded_state() const { return shards_optimizer && !shards_grads; }
};

// The caller validates the stage (is_zero_stage); a larger number reads as stage 3's rule.
inline StageTraits stage_traits(int stage) {
  return StageTraits{stage >= 1, stage >= 2, stage >= 3};
}

}  // namespace zt
