// The ds_config schema: for every block, the keys zerotrain knows, their JSON kind, the Config
// field each one fills, aliases and deprecated spellings; plus did-you-mean by edit distance.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "runtime/config/config.h"

namespace zt {

// How a key's JSON value is read. Int and Count take an integer, or an integral number written with
// an exponent or a fraction of zero (5e8, 32.0; the echo notes it); they refuse 1.5, true and "32".
// Count is the name for sizes, whose messages suggest 5e8-style values.
enum class Kind { Int, Count, Number, Bool, String, Betas, NullableInt, StringList };

// How DeepSpeed itself reads a block, which decides what an unknown key or an unfilled "auto" means:
//   Dict:   read key by key with defaults; unknown keys are silently ignored, and "auto" reaches the
//           code as the string "auto" (a type error there) unless the HF Trainer filled it;
//   Model:  a pydantic config model with extra="forbid": unknown keys are refused, and an "auto" no
//           one filled is dropped, so the field keeps its default;
//   Kwargs: passed as keyword arguments to the optimizer's or scheduler's constructor: unknown keys
//           are refused (TypeError).
enum class DsBlock { Dict, Model, Kwargs };

using FieldPtr = std::variant<Field<int64_t>*, Field<double>*, Field<bool>*, Field<std::string>*,
                              Field<std::vector<double>>*, Field<std::optional<int64_t>>*,
                              Field<std::vector<std::string>>*>;

struct KeyBinding {
  std::string key;                   // spelling in the file
  Kind kind = Kind::Int;
  FieldPtr field;
  std::vector<std::string> choices;  // String keys with a closed set of values
  bool accepts_auto = false;         // "auto" is resolved (from a flag, the model or derivation)
  std::string auto_flag;             // the flag that resolves "auto" ("" when derived)
  std::string canonical;             // for aliases: the preferred spelling ("" = this one)
  bool deprecated = false;           // an old spelling: warn and map onto `canonical`
  bool hidden = false;               // not echoed (deprecated flags mapped elsewhere)
  bool stage3_only = false;          // only meaningful with zero_optimization.stage 3
  bool exact_int = false;            // DeepSpeed checks isinstance(v, int): 1000.0 is refused there too
  bool nullable = false;             // null is accepted and means the default
  bool choices_ignore_case = false;  // DeepSpeed lower- or upper-cases the value before comparing
  std::vector<std::pair<std::string, std::string>> choice_aliases;  // other spellings DeepSpeed takes -> ours
  std::string choice_fallback;       // DeepSpeed warns and uses this for a value outside `choices`
};

struct BlockSchema {
  std::string path;                     // "" for the top level, "zero_optimization.offload_param"
  bool* present = nullptr;              // set when the block appears in the file
  std::vector<KeyBinding> keys;
  std::vector<std::string> sub_blocks;  // keys whose value is a nested block
  DsBlock ds = DsBlock::Dict;
};

// The schema of one block, bound to `c`. Blocks that depend on a type (optimizer.params,
// scheduler.params) use the type already stored in `c`. Returns false for an unknown path.
bool block_schema(Config& c, const std::string& path, BlockSchema& out);

// Every block path, in echo order (optimizer.params and scheduler.params follow their type).
std::vector<std::string> block_paths(const Config& c);

// Map a sub-block key as written ("bfloat16") to its schema path ("bf16").
std::string sub_block_path(const std::string& parent, const std::string& key);

// Supported optimizer / scheduler type names (canonical spelling).
const std::vector<std::string>& supported_optimizers();
const std::vector<std::string>& supported_schedulers();
// Names DeepSpeed accepts that zerotrain does not implement.
const std::vector<std::string>& unsupported_deepspeed_optimizers();
const std::vector<std::string>& unsupported_deepspeed_schedulers();

size_t edit_distance(const std::string& a, const std::string& b);
// The nearest of `valid` to `key` when it is close enough to be a likely typo, else "".
std::string suggest_key(const std::string& key, const std::vector<std::string>& valid);
// Every valid key of a block (keys and sub-blocks), sorted.
std::vector<std::string> valid_keys(const BlockSchema& b);
// Blocks other than `except` that have `key`: for "did you mean zero_optimization.stage".
std::vector<std::string> blocks_with_key(const Config& c, const std::string& key, const std::string& except);

const char* kind_name(Kind k);

}  // namespace zt
