// UnitLayout: where each named parameter tensor of a model unit (embedding, block, head) lives
// inside that unit's one flat buffer, so the engine can shard, gather and release a unit whole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/model/model_config.h"

namespace zt {

enum class UnitKind { Embedding, Block, Head };

struct TensorView {
  std::string name;            // "wte", "qkv_w", ...
  int64_t offset = 0;          // in elements from the start of the unit's buffer
  int64_t numel = 0;
  std::vector<int64_t> shape;  // row-major; linear weights are [out, in]
  bool decay = false;          // true for matrices (weight decay applies), false for biases/norms
  float init_std = 0.f;        // 0: constant init (init_value); else N(0, init_std)
  float init_value = 0.f;
};

struct UnitLayout {
  UnitKind kind = UnitKind::Block;
  int index = 0;               // position in walk order: 0 embedding, 1..L blocks, L+1 head
  std::string name;            // "embedding", "block3", "head"
  std::vector<TensorView> tensors;  // contiguous, in this order, no gaps
  int64_t numel = 0;           // sum of tensor sizes (the engine adds its own padding)

  const TensorView& tensor(const std::string& name) const;  // throws std::out_of_range if absent
  int64_t offset(const std::string& name) const { return tensor(name).offset; }
};

// Typed views into a unit's flat buffer of act_dtype values: view("qkv_w") is that tensor's first element.
struct UnitView {
  const UnitLayout& layout;
  char* base;
  size_t element_bytes;
  void* operator()(const char* name) const { return base + size_t(layout.offset(name)) * element_bytes; }
};

// The layouts of all units of a model, in walk order (config.units() entries).
std::vector<UnitLayout> build_unit_layouts(const ModelConfig& config);

const char* unit_kind_name(UnitKind k);

}  // namespace zt
