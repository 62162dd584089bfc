// FakeShardedState: the partition ZeRO's ShardMap makes, and generation-stamped values.
#include "tests/checkpoint/fake_state.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace zt::test {

FakeShardedState::FakeShardedState(const ModelConfig& model, int world, int rank, int stage, OptimizerType optimizer,
                                   DType precision, bool sgd_momentum)
    : units_(build_unit_layouts(model)), world_(world), rank_(rank), stage_(stage), optimizer_(optimizer),
      precision_(precision), arrays_(state_arrays_for(optimizer_, sgd_momentum)) {
  for (const auto& u : units_) {
    const int64_t align = int64_t(world) * 16;
    const int64_t padded = (u.numel + align - 1) / align * align, shard = padded / world;
    const int64_t b = std::min(u.numel, shard * rank), e = std::min(u.numel, shard * (rank + 1));
    if (e > b) owned_.push_back({u.index, b, e - b});
    if (stage == 0) needed_.push_back({u.index, 0, u.numel});
    else if (e > b) needed_.push_back({u.index, b, e - b});
  }
  values_.assign(arrays_.size(), {});
  written_.assign(arrays_.size(), {});
  for (size_t a = 0; a < arrays_.size(); ++a)
    for (const auto& u : units_) {
      values_[a].emplace_back(size_t(u.numel), 0.f);
      written_[a].emplace_back(size_t(u.numel), uint8_t(0));
    }
}

float FakeShardedState::value(const std::string& array, int unit, int64_t elem, int64_t g) {
  uint64_t h = 1469598103934665603ull;
  for (char c : array) h = (h ^ uint64_t(uint8_t(c))) * 1099511628211ull;
  h ^= (uint64_t(unit) << 40) ^ (uint64_t(elem) << 8) ^ uint64_t(g) * 0x9e3779b97f4a7c15ull;
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 32;
  return float(int64_t(h % 2000001) - 1000000) * 1e-6f;  // in [-1, 1], exact in fp32 steps
}

std::vector<float>& FakeShardedState::data(const std::string& array, int unit) {
  const auto it = std::find(arrays_.begin(), arrays_.end(), array);
  if (it == arrays_.end()) throw std::logic_error("fake state: no array " + array);
  return values_[size_t(it - arrays_.begin())].at(size_t(unit));
}
const std::vector<float>& FakeShardedState::data(const std::string& array, int unit) const {
  return const_cast<FakeShardedState*>(this)->data(array, unit);
}

bool FakeShardedState::inside(const std::vector<ElementRange>& set, const ElementRange& r) {
  for (const auto& s : set)
    if (s.unit == r.unit && r.begin >= s.begin && r.end() <= s.end()) return true;
  return false;
}

std::vector<ShardedState::PrivateArray> FakeShardedState::private_arrays(const nlohmann::json&) const {
  if (!with_private) return {};
  return {{"errors_a", private_length("errors_a")}, {"errors_b", private_length("errors_b")}};
}

int64_t FakeShardedState::private_length(const std::string& name) const {
  return name == "errors_a" ? 1000 + 37 * rank_ : 64;
}

float FakeShardedState::private_value(const std::string& name, int rank, int64_t elem, int64_t generation) {
  return float(name.size()) * 0.5f + float(rank) * 1000.0f + float(elem) * 0.25f - float(generation);
}

void FakeShardedState::read_private(const std::string& name, float* out) {
  for (int64_t i = 0; i < private_length(name); ++i) out[i] = private_value(name, rank_, i, generation_);
}

void FakeShardedState::fill(int64_t g) {
  generation_ = g;
  for (const auto& a : arrays_)
    for (const auto& r : needed_) {
      auto& v = data(a, r.unit);
      for (int64_t i = r.begin; i < r.end(); ++i) v[size_t(i)] = value(a, r.unit, i, g);
    }
  for (auto& per_array : written_)
    for (auto& w : per_array) std::fill(w.begin(), w.end(), uint8_t(0));
  counters_ = {{"step", g}, {"applied_steps", g}, {"skipped_steps", 0}, {"lr", 0.001 * double(g)},
               {"loss_scaler", {{"scale", 65536.0 / double(1 + g)}, {"cur_hysteresis", 2}, {"cur_iter", g},
                                {"last_overflow_iter", -1}}}};
}

int64_t FakeShardedState::mismatches(int64_t g, const std::vector<std::string>& arrays) const {
  int64_t bad = 0;
  for (const auto& a : arrays)
    for (const auto& r : needed_) {
      const auto& v = data(a, r.unit);
      for (int64_t i = r.begin; i < r.end(); ++i) bad += v[size_t(i)] != value(a, r.unit, i, g);
    }
  return bad;
}

void FakeShardedState::read(const std::string& array, const ElementRange& r, float* out) {
  if (!inside(owned_, r)) throw std::logic_error("fake state: read outside owned()");
  std::memcpy(out, data(array, r.unit).data() + r.begin, size_t(r.n) * 4);
  elements_read += r.n;
}

void FakeShardedState::write(const std::string& array, const ElementRange& r, const float* in) {
  if (!inside(needed_, r)) throw std::logic_error("fake state: write outside needed()");
  std::memcpy(data(array, r.unit).data() + r.begin, in, size_t(r.n) * 4);
  auto& w = written_[size_t(std::find(arrays_.begin(), arrays_.end(), array) - arrays_.begin())][size_t(r.unit)];
  for (int64_t i = r.begin; i < r.end(); ++i) rewritten += w[size_t(i)]++ > 0;
  elements_written += r.n;
}

}  // namespace zt::test
