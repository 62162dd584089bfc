// FakeShardedState: a ShardedState with ZeRO's partition (each unit padded to world × 16 elements
// and split evenly; stage 0 reports the same split as owned and needs everything) and values that
// are a pure function of (array, unit, element, generation), so tests can check every element.
#pragma once

#include <cstdint>
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
};

}  // namespace zt::test
