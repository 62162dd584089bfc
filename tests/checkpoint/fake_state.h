// FakeShardedState: a ShardedState with ZeRO's partition (each unit padded to world × 16 elements
// and split evenly; stage 0 reports the same split as owned and needs everything) and values that
// are a pure function of (array, unit, element, generation), so tests can check every element.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/checkpoint/sharded_state.h"
#include "runtime/model/model_config.h"

namespace zt::test {

class FakeShardedState final : public ShardedState {
 public:
  FakeShardedState(const ModelConfig& model, int world, int rank, int stage,
                   OptimizerType optimizer = OptimizerType::AdamW, DType precision = DType::F32, bool sgd_momentum = true);

  // The value element `elem` of `unit` has in array `array` after `generation` steps.
  static float value(const std::string& array, int unit, int64_t elem, int64_t generation);
  // Sets every element this rank holds to generation `g`'s values and the counters to step g.
  void fill(int64_t g);
  // Elements of needed() (in loaded arrays) that differ from generation g; 0 = all equal.
  int64_t mismatches(int64_t g, const std::vector<std::string>& arrays) const;

  const std::vector<UnitLayout>& units() const override { return units_; }
  int world_size() const override { return world_; }
  int rank() const override { return rank_; }
  int stage() const override { return stage_; }
  DType precision() const override { return precision_; }
  OptimizerType optimizer() const override { return optimizer_; }
  std::vector<std::string> arrays() const override { return arrays_; }
  std::vector<ElementRange> owned() const override { return owned_; }
  std::vector<ElementRange> needed() const override { return needed_; }
  void read(const std::string& array, const ElementRange& r, float* out) override;
  void write(const std::string& array, const ElementRange& r, const float* in) override;
  void commit() override { ++commits; }
  nlohmann::json counters() const override { return counters_; }
  void set_counters(const nlohmann::json& c) override { counters_ = c; }

  // Private arrays (off unless `with_private`): two per rank, of rank-dependent length, whose values
  // are a function of (name, rank, element, generation); what a load gave back is kept apart.
  bool with_private = false;
  std::vector<PrivateArray> private_arrays(const nlohmann::json& counters) const override;
  void read_private(const std::string& name, float* out) override;
  void write_private(const std::string& name, const float* in) override { loaded_private[name].assign(in, in + private_length(name)); }
  void private_not_loaded(const std::string& why) override { private_why = why; }
  static float private_value(const std::string& name, int rank, int64_t elem, int64_t generation);
  int64_t private_length(const std::string& name) const;
  std::map<std::string, std::vector<float>> loaded_private;
  std::string private_why;

  // Observations for the tests.
  int commits = 0;
  int64_t elements_written = 0, elements_read = 0;
  int64_t rewritten = 0;  // elements written more than once since the last fill

 private:
  std::vector<float>& data(const std::string& array, int unit);
  const std::vector<float>& data(const std::string& array, int unit) const;
  static bool inside(const std::vector<ElementRange>& set, const ElementRange& r);
  std::vector<UnitLayout> units_;
  int world_, rank_, stage_;
  OptimizerType optimizer_;
  DType precision_;
  std::vector<std::string> arrays_;
  std::vector<ElementRange> owned_, needed_;
  std::vector<std::vector<std::vector<float>>> values_;  // [array][unit][element]
  std::vector<std::vector<std::vector<uint8_t>>> written_;
  nlohmann::json counters_ = nlohmann::json::object();
  int64_t generation_ = 0;
};

}  // namespace zt::test
