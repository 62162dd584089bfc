// The DeepSpeed keys zerotrain knows but does not read into its Config: features it does not
// implement, compatibility switches that change nothing here, and names DeepSpeed itself ignores.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace zt {

enum class DsKeyClass {
  // A DeepSpeed feature that changes what training computes (or how the batch is formed). An
  // error whenever it is on, --allow-unknown-keys or not; with its "off" value only a note.
  Unimplemented,
  // A DeepSpeed feature zerotrain lacks that leaves the computed result alone (a monitor, a
  // checkpoint engine, a compiler, a communication scheme). An error when on, a warning under
  // --allow-unknown-keys; with its "off" value only a note.
  NotBuilt,
  // A switch that changes nothing zerotrain computes: accepted, with a note when it is not
  // DeepSpeed's default.
  Compat,
  // A name DeepSpeed does not read at all (an author may believe it does something): caught as
  // an unknown key is, and the message says that DeepSpeed ignores it.
  Ignored,
};

// When a value means "off" (the feature is not used, whatever else the block says).
enum class DsOff {
  Never,         // present = on
  False,         // false (or null) = off
  True,          // true = off (managed_gradient_accumulation)
  EnabledFalse,  // an object without "enabled": true (or null, or {}) = off
  AtMostOne,     // a number <= 1 = off (partition sizes)
  AtMostZero,    // a number <= 0 = off (mics_shard_size: -1)
  NullOrEmpty,   // null or {} = off
  Custom,        // decided in code (compile, tensor_parallel)
};

enum class DsValue { Any, Bool, Int, Number, String, Object };  // the JSON kind DeepSpeed reads

struct DsKey {
  const char* block;  // schema path: "" (top level), "zero_optimization", "bf16", ...
  const char* key;
  DsKeyClass cls;
  DsOff off;
  DsValue value;
  const char* what;   // what it does in DeepSpeed (for Ignored: why it has no effect there, and the hint)
};

// The entry for `key` in `block`, or nullptr.
const DsKey* find_ds_key(const std::string& block, const std::string& key);
// Every key of the table in `block` (for did-you-mean and the list of valid keys).
std::vector<std::string> ds_keys_of(const std::string& block);
// True when `v` means the feature is off.
bool ds_key_is_off(const DsKey& k, const nlohmann::json& v);
// True when `v` has the JSON kind the entry expects.
bool ds_key_kind_ok(const DsKey& k, const nlohmann::json& v);
// The whole table (tests check its classes; configs/README.md lists it).
const std::vector<DsKey>& ds_key_table();

}  // namespace zt
