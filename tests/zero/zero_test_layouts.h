// Unit layouts the ZeRO table tests share: the tiny GPT-2 preset's units (tied and untied head) and
// hand-made layouts whose sizes do not divide by any world size (a prime, a one-element unit, an
// empty unit), plus the padding arithmetic the tests compute on their own.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/model/model_config.h"
#include "runtime/model/unit_layout.h"
#include "runtime/zero/shard_map.h"

namespace zt::test {

struct NamedLayout {
  std::string name;
  std::vector<UnitSpec> units;
};

inline std::vector<UnitSpec> gpt2_units(bool tied) {
  ModelConfig m = *model_preset("tiny");
  m.tied_embeddings = tied;
  std::vector<UnitSpec> specs;
  for (const UnitLayout& l : build_unit_layouts(m)) {
    UnitSpec s{l.name, l.numel, {}};
    for (const TensorView& t : l.tensors) s.tensors.push_back({t.name, t.offset, t.numel, int(t.shape.size())});
    specs.push_back(std::move(s));
  }
  return specs;
}

// 37 (two tensors), 5, an empty unit, 101 (prime), 1: no size divides by 2..8.
inline std::vector<UnitSpec> odd_units() {
  return {UnitSpec{"embedding", 37, {{"wte", 0, 30}, {"wpe", 30, 7}}},
          UnitSpec{"block1", 5, {{"w", 0, 5}}},
          UnitSpec{"empty", 0, {}},
          UnitSpec{"block2", 101, {{"w", 0, 64}, {"b", 64, 37}}},
          UnitSpec{"head", 1, {{"lnf", 0, 1}}}};
}

// Larger primes, so that shards hold more than one alignment quantum and the last rank's shard is
// partly padding.
inline std::vector<UnitSpec> prime_units() {
  return {UnitSpec{"a", 1009, {{"x", 0, 1009}}}, UnitSpec{"b", 997, {{"y", 0, 500}, {"z", 500, 497}}},
          UnitSpec{"c", 13, {{"w", 0, 13}}}};
}

inline std::vector<NamedLayout> all_layouts() {
  return {{"gpt2_tiny_tied", gpt2_units(true)},
          {"gpt2_tiny_untied", gpt2_units(false)},
          {"odd", odd_units()},
          {"primes", prime_units()}};
}

// The padded length of a unit of n elements at world size W and alignment a, computed here rather
// than read from ShardMap: n rounded up to a multiple of W·a, and at least one W·a quantum.
inline int64_t padded_len(int64_t n, int W, int64_t a) {
  const int64_t q = int64_t(W) * a;
  const int64_t up = (n + q - 1) / q * q;
  return std::max(q, up);
}

}  // namespace zt::test
