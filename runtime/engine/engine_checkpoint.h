// EngineCheckpoint: the ZeRO engine as a checkpoint's ShardedState — the partition's owned and
// needed ranges, the fp32 master and moments by range wherever they live, the counters, commit().
#pragma once

#include <string>
#include <vector>

#include "runtime/checkpoint/sharded_state.h"
#include "runtime/common/diagnostics.h"
#include "runtime/engine/engine.h"
#include "runtime/model/model_config.h"

namespace zt {

class EngineCheckpoint final : public ShardedState {
 public:
  EngineCheckpoint(Engine& engine, const ModelConfig& model);

  const std::vector<UnitLayout>& units() const override { return units_; }
  // The world's: under MiCS every replica of a shard group holds the same state, so the first
  // group's ranks own it all (the others write an empty rank file) and every rank loads its shard.
  int world_size() const override { return engine_.world_size(); }
  int rank() const override { return engine_.world_rank(); }
  int stage() const override { return part_.stage(); }
  DType precision() const override { return engine_.options().zero.precision; }
  OptimizerType optimizer() const override { return engine_.options().optimizer.type; }
  std::vector<std::string> arrays() const override { return arrays_; }
  std::vector<ElementRange> owned() const override { return owned_; }
  std::vector<ElementRange> needed() const override { return needed_; }
  void read(const std::string& array, const ElementRange& r, float* out) override;
  void write(const std::string& array, const ElementRange& r, const float* in) override;
  // The optimizer's own host storage of the range (backend memory on the CPU backend, or the
  // offloaded host arrays), or null for NVMe records and device memory.
  float* write_target(const std::string& array, const ElementRange& r) override;
  void commit() override { engine_.params_from_master(); }
  nlohmann::json counters() const override;
  // Restores step, applied/skipped counts and the fp16 scaler. Bad types are a UserError naming the
  // key; a saved lr the schedule does not reproduce, or a scaler state a fp16 run lacks, a warning.
  void set_counters(const nlohmann::json& c) override;

  // A compressed optimizer's arrays of this rank alone (CompressedOptimizer::rank_arrays: the error
  // feedback; 0/1 Adam's own parameters and momentum between a local step and the next sync).
  std::vector<PrivateArray> private_arrays(const nlohmann::json& counters) const override;
  std::vector<PrivateArray> largest_private_arrays() const override;
  void read_private(const std::string& name, float* out) override;
  void write_private(const std::string& name, const float* in) override;
  void private_not_loaded(const std::string& why) override { private_why_ = why; }

  // Warnings of the last set_counters (the run prints them).
  const Diagnostics& warnings() const { return warnings_; }

 private:
  StateArray array_of(const std::string& name) const;
  // The range in the unit's state coordinates, checked to lie in one range of `set`.
  int64_t state_begin(const ElementRange& r, const std::vector<ElementRange>& set, const char* what) const;

  Engine& engine_;
  const Partition& part_;
  std::vector<UnitLayout> units_;
  std::vector<std::string> arrays_;
  std::vector<ElementRange> owned_, needed_;
  nlohmann::json kept_ = nlohmann::json::object();  // counters this engine does not read, handed back
  Diagnostics warnings_;
  bool private_loaded_ = false;  // the last load gave this rank's private arrays back
  std::string private_why_;      // or why it could not
};

}  // namespace zt
