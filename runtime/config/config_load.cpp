// load_config: read the file, walk every block against the schema (types, aliases, deprecated
// spellings, unknown keys), then resolve "auto", the batch equation, and validate combinations.
#include "runtime/config/config_load.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "runtime/config/config_schema.h"
#include "runtime/config/json_strict.h"

namespace zt {
namespace {

using json = nlohmann::json;

std::string join(const std::vector<std::string>& v, const std::string& sep = ", ") {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

std::string json_type(const json& v) {
  if (v.is_string()) return "a string";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number_float()) return "a floating-point number";
  if (v.is_number()) return "an integer";
  if (v.is_null()) return "null";
  if (v.is_array()) return "a list";
  return "an object";
}

class Walker {
 public:
  Walker(Config& c, Diagnostics& d, const LoadOptions& o) : c_(c), d_(d), opt_(o) {}

  void walk(const json& obj, const std::string& path) {
    BlockSchema s;
    if (!block_schema(c_, path, s)) return;
    if (s.present) *s.present = true;
    std::map<const void*, std::string> seen;  // field -> spelling that set it
    std::vector<std::pair<std::string, const json*>> subs;
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      const std::string& k = it.key();
      const std::string full = path.empty() ? k : path + "." + k;
      const KeyBinding* b = find(s, k);
      if (b) {
        const void* fp = std::visit([](auto* p) { return static_cast<const void*>(p); }, b->field);
        auto prev = seen.find(fp);
        if (prev != seen.end()) {
          same_key_twice(path, prev->second, k, s);
        } else {
          seen[fp] = k;
          apply(*b, it.value(), full);
        }
      } else if (is_sub_block(s, k)) {
        subs.emplace_back(k, &it.value());
      } else if (path == "optimizer.params" && k == "max_grad_norm") {
        d_.error(full, show_value(it.value()),
                 "gradient clipping is not an optimizer parameter (DeepSpeed clips with the top-level gradient_clipping)",
                 "remove optimizer.params.max_grad_norm and set \"gradient_clipping\": " + show_value(it.value()) +
                     " at the top level");
      } else {
        unknown(s, k, it.value(), full);
      }
    }
    after_keys(path, subs);
    for (auto& [k, v] : subs) {
      const std::string full = path.empty() ? k : path + "." + k;
      if (path.empty() && k == "bfloat16") {
        if (obj.contains("bf16")) {
          d_.error("bfloat16", "", "both \"bf16\" and its alias \"bfloat16\" are given",
                   "keep only \"bf16\" (the two spellings are the same block)");
          continue;
        }
        c_.bf16.spelling = "bfloat16";
      }
      if (v->is_null()) continue;  // DeepSpeed accepts null for an absent block
      if (!v->is_object()) {
        d_.error(full, show_value(*v), "must be a block (a JSON object {...}), got " + json_type(*v),
                 "write \"" + k + "\": { ... } or remove it");
        continue;
      }
      if (skip_.count(full)) continue;
      walk(*v, sub_block_path(path, k));
    }
  }

 private:
  static const KeyBinding* find(const BlockSchema& s, const std::string& k) {
    for (const auto& b : s.keys)
      if (b.key == k) return &b;
    return nullptr;
  }
  static bool is_sub_block(const BlockSchema& s, const std::string& k) {
    for (const auto& b : s.sub_blocks)
      if (b == k) return true;
    return false;
  }

  void same_key_twice(const std::string& path, const std::string& first, const std::string& second,
                      const BlockSchema& s) {
    const KeyBinding* a = find(s, first);
    const KeyBinding* b = find(s, second);
    const std::string where = path.empty() ? "" : path + ".";
    const bool deprecated = a->deprecated || b->deprecated;
    const std::string keep = !a->canonical.empty() ? (b->canonical.empty() ? second : a->canonical) : first;
    if (deprecated) {
      d_.error(where + second, "", "the old spelling and the new spelling of the same key are both given (" + first + ", " +
                                       second + ")",
               "keep only \"" + keep + "\"");
    } else {
      d_.error(where + second, "", "\"" + first + "\" and \"" + second + "\" are the same setting and both are given",
               "keep only one of them (e.g. \"" + keep + "\")");
    }
  }

  void unknown(const BlockSchema& s, const std::string& k, const json& v, const std::string& full) {
    if (s.path.empty() && (k == "wandb" || k == "comet")) {  // DeepSpeed's network monitors
      const json* on = v.is_object() && v.contains("enabled") ? &v["enabled"] : nullptr;
      if (on && on->is_boolean() && !on->get<bool>()) return;  // a disabled block asks for nothing
      const std::string why = "the " + k + " monitor is not built: it sends metrics over the network, and zerotrain "
                              "writes them locally only";
      const std::string fix = "use \"tensorboard\" or \"csv_monitor\" (both under output_path/job_name/), or set \"" + k +
                              "\": {\"enabled\": false}";
      if (opt_.allow_unknown_keys)
        d_.warning(full, show_value(v), "unknown key (ignored: --allow-unknown-keys): " + why, fix);
      else
        d_.error(full, show_value(v), why, fix);
      return;
    }
    const auto valid = valid_keys(s);
    std::string msg = "unknown key";
    if (!s.path.empty()) msg += " in block \"" + s.path + "\"";
    const std::string near = suggest_key(k, valid);
    if (!near.empty()) msg += " (did you mean \"" + near + "\"?)";
    const auto elsewhere = blocks_with_key(c_, k, s.path);
    if (near.empty() && !elsewhere.empty()) msg += "; it is a key of " + join(elsewhere, " or ");
    const std::string fix = (near.empty() ? std::string() : "rename it to \"" + near + "\"; ") +
                            "valid keys here: " + join(valid);
    if (opt_.allow_unknown_keys) {
      d_.warning(full, show_value(v), msg + " (ignored: --allow-unknown-keys)", fix);
    } else {
      d_.error(full, show_value(v), msg, fix + " (or pass --allow-unknown-keys to only warn)");
    }
  }

  // Block-level checks that must happen before sub-blocks are walked (the type picks params' keys).
  void after_keys(const std::string& path, const std::vector<std::pair<std::string, const json*>>& subs) {
    if (path == "optimizer") check_type("optimizer", c_.optimizer.type, supported_optimizers(),
                                        unsupported_deepspeed_optimizers(), false);
    if (path == "scheduler") check_type("scheduler", c_.scheduler.type, supported_schedulers(),
                                        unsupported_deepspeed_schedulers(), true);
  }

  void check_type(const std::string& block, Field<std::string>& type, const std::vector<std::string>& ok,
                  const std::vector<std::string>& ds_only, bool case_sensitive) {
    const std::string path = block + ".type";
    if (!type.present) {
      if (!type.invalid)
        d_.error(path, "", "the " + block + " block has no \"type\"", "add \"type\": one of " + join(ok));
      type.value = ok.front() == "Adam" ? "AdamW" : ok.front();
      skip_.insert(block + ".params");
      return;
    }
    for (const auto& name : ok) {
      const bool match = case_sensitive ? name == type.value : edit_distance(name, type.value) == 0 &&
                                                                   name.size() == type.value.size();
      if (match) {
        type.value = name;  // DeepSpeed compares optimizer names case-insensitively
        return;
      }
    }
    std::string msg = "unsupported " + block + " type";
    for (const auto& name : ds_only)
      if (edit_distance(name, type.value) == 0) msg += " (DeepSpeed has it; zerotrain does not implement it)";
    std::vector<std::string> all = ok;
    const std::string near = suggest_key(type.value, all);
    if (!near.empty() && near != type.value) msg += " (did you mean \"" + near + "\"?)";
    d_.error(path, "\"" + type.value + "\"", msg, "use one of: " + join(ok));
    skip_.insert(block + ".params");
  }

  template <class T>
  void set(Field<T>& f, T v, const KeyBinding& b) {
    f.value = std::move(v);
    f.present = true;
    f.is_auto = false;
    f.invalid = false;
    if (b.deprecated) {
      f.source = {SourceKind::Deprecated, b.key};
    } else {
      f.source = {SourceKind::File, ""};
    }
  }

  void type_error(const KeyBinding& b, const json& v, const std::string& full, std::string extra = {}) {
    std::string msg = "must be " + std::string(kind_name(b.kind)) + ", got " + json_type(v);
    std::string fix = "write " + std::string(kind_name(b.kind));
    if (b.kind == Kind::Int || b.kind == Kind::Count || b.kind == Kind::Number) {
      if (v.is_string()) {
        fix = "remove the quotes";
        if (b.accepts_auto) fix += " (or write \"auto\")";
      } else if (v.is_number_float() && b.kind == Kind::Int && std::isfinite(v.get<double>()) &&
                 std::floor(v.get<double>()) == v.get<double>() && std::fabs(v.get<double>()) < 9e18) {
        fix = "write " + std::to_string(static_cast<long long>(v.get<double>())) + " (no decimal point)";
      }
    } else if (b.kind == Kind::Bool && v.is_string()) {
      fix = "write true or false without quotes";
    }
    if (!extra.empty()) msg += " (" + extra + ")";
    d_.error(full, show_value(v), msg, fix);
    std::visit([](auto* p) { p->invalid = true; }, b.field);
  }

  void apply(const KeyBinding& b, const json& v, const std::string& full) {
    if (b.deprecated && !b.hidden) {
      d_.warning(full, show_value(v), "deprecated spelling; read as \"" + b.canonical + "\"",
                 "rename it to \"" + b.canonical + "\"");
    } else if (b.hidden) {
      d_.warning(full, show_value(v), "deprecated key; read as " + b.canonical, "use " + b.canonical + " instead");
    }
    if (v.is_string() && v.get<std::string>() == "auto" && b.kind != Kind::String) {
      if (!b.accepts_auto) {
        d_.error(full, "\"auto\"", "\"auto\" cannot be resolved for this key (no command-line flag or derivation sets it)",
                 "write " + std::string(kind_name(b.kind)) + "; see configs/README.md for the keys that accept \"auto\"");
        std::visit([](auto* p) { p->invalid = true; }, b.field);
        return;
      }
      std::visit(
          [&](auto* p) {
            p->present = true;
            p->is_auto = true;
            p->source = {b.deprecated ? SourceKind::Deprecated : SourceKind::File, b.deprecated ? b.key : ""};
          },
          b.field);
      return;
    }
    switch (b.kind) {
      case Kind::Int:
      case Kind::Count: {
        auto* f = std::get<Field<int64_t>*>(b.field);
        if (v.is_number_unsigned()) {
          if (v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) return type_error(b, v, full, "too large");
          return set(*f, static_cast<int64_t>(v.get<uint64_t>()), b);
        }
        if (v.is_number_integer()) return set(*f, v.get<int64_t>(), b);
        if (b.kind == Kind::Count && v.is_number_float()) {
          const double x = v.get<double>();
          if (std::isfinite(x) && std::floor(x) == x && std::fabs(x) < 9.2e18) return set(*f, static_cast<int64_t>(x), b);
          return type_error(b, v, full, "not a whole number");
        }
        return type_error(b, v, full);
      }
      case Kind::Number: {
        auto* f = std::get<Field<double>*>(b.field);
        if (v.is_number()) return set(*f, v.get<double>(), b);
        return type_error(b, v, full);
      }
      case Kind::Bool: {
        auto* f = std::get<Field<bool>*>(b.field);
        if (v.is_boolean()) return set(*f, v.get<bool>(), b);
        return type_error(b, v, full);
      }
      case Kind::String: {
        auto* f = std::get<Field<std::string>*>(b.field);
        if (!v.is_string()) return type_error(b, v, full);
        const std::string s = v.get<std::string>();
        if (!b.choices.empty()) {
          bool ok = false;
          for (const auto& ch : b.choices) ok = ok || ch == s;
          if (!ok) {
            const std::string near = suggest_key(s, b.choices);
            d_.error(full, show_value(v), "not one of the accepted values" + (near.empty() ? "" : " (did you mean \"" + near + "\"?)"),
                     "use one of: " + join(b.choices));
            f->invalid = true;
            return;
          }
        }
        return set(*f, s, b);
      }
      case Kind::Betas: {
        auto* f = std::get<Field<std::vector<double>>*>(b.field);
        if (!v.is_array() || v.size() != 2 || !v[0].is_number() || !v[1].is_number())
          return type_error(b, v, full);
        return set(*f, std::vector<double>{v[0].get<double>(), v[1].get<double>()}, b);
      }
      case Kind::NullableInt: {
        auto* f = std::get<Field<std::optional<int64_t>>*>(b.field);
        if (v.is_null()) return set(*f, std::optional<int64_t>{}, b);
        if (v.is_number_integer() && !(v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)))
          return set(*f, std::optional<int64_t>{v.get<int64_t>()}, b);
        return type_error(b, v, full);
      }
      case Kind::StringList: {
        auto* f = std::get<Field<std::vector<std::string>>*>(b.field);
        if (!v.is_array()) return type_error(b, v, full);
        std::vector<std::string> out;
        for (const auto& e : v) {
          if (!e.is_string()) return type_error(b, v, full);
          out.push_back(e.get<std::string>());
        }
        return set(*f, out, b);
      }
    }
  }

  Config& c_;
  Diagnostics& d_;
  const LoadOptions& opt_;
  std::set<std::string> skip_;
};

// cpu_offload / cpu_offload_param / cpu_offload_use_pin_memory: map onto the offload blocks.
void map_deprecated_offload(Config& c, Diagnostics& d) {
  auto& z = c.zero_optimization;
  struct Old {
    Field<bool>& flag;
    const char* key;
    OffloadConfig& block;
    const char* block_key;
  };
  for (Old o : {Old{z.cpu_offload, "cpu_offload", z.offload_optimizer, "offload_optimizer"},
                Old{z.cpu_offload_param, "cpu_offload_param", z.offload_param, "offload_param"}}) {
    if (!o.flag.present) continue;
    if (o.block.present) {
      d.error(std::string("zero_optimization.") + o.key, o.flag.value ? "true" : "false",
              std::string("the old key and its replacement zero_optimization.") + o.block_key + " are both given",
              std::string("remove zero_optimization.") + o.key + " and keep " + o.block_key);
      continue;
    }
    if (o.flag.value) {
      o.block.present = true;
      o.block.device.value = "cpu";
      o.block.device.present = true;
      o.block.device.source = {SourceKind::Deprecated, std::string("zero_optimization.") + o.key};
    }
  }
  if (z.cpu_offload_use_pin_memory.present) {
    for (OffloadConfig* b : {&z.offload_optimizer, &z.offload_param}) {
      if (b->pin_memory.present && b->pin_memory.source.kind == SourceKind::File) {
        d.error("zero_optimization.cpu_offload_use_pin_memory", z.cpu_offload_use_pin_memory.value ? "true" : "false",
                "the old key and its replacement pin_memory inside the offload block are both given",
                "remove zero_optimization.cpu_offload_use_pin_memory");
        return;
      }
    }
    for (OffloadConfig* b : {&z.offload_optimizer, &z.offload_param}) {
      b->pin_memory.value = z.cpu_offload_use_pin_memory.value;
      b->pin_memory.present = true;
      b->pin_memory.source = {SourceKind::Deprecated, "zero_optimization.cpu_offload_use_pin_memory"};
    }
  }
}

void derive_defaults(Config& c) {
  auto& z = c.zero_optimization;
  if (!z.overlap_comm.present) {
    z.overlap_comm.value = z.stage.value == 3;
    z.overlap_comm.source = {SourceKind::Derived, "true for stage 3, false otherwise (DeepSpeed's rule)"};
  }
}

}  // namespace

LoadResult load_config_text(const std::string& text, const std::string& name, const LoadOptions& opts) {
  LoadResult r;
  r.config.file = name;
  Diagnostics& d = r.diagnostics;
  json doc;
  if (!parse_json_strict(text, name, doc, d)) return r;
  if (!doc.is_object()) {
    d.error(name, show_value(doc), "a ds_config must be a JSON object ({...}) at the top level, got " + json_type(doc),
            "wrap the settings in { }");
    return r;
  }
  Walker(r.config, d, opts).walk(doc, "");
  map_deprecated_offload(r.config, d);
  derive_defaults(r.config);
  resolve_auto(r.config, opts, d);
  resolve_batch(r.config, opts.world_size, opts.world_source, d);
  validate_config(r.config, opts, d);
  return r;
}

LoadResult load_config(const std::string& path, const LoadOptions& opts) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    LoadResult r;
    r.config.file = path;
    r.diagnostics.error(path, "", "is a directory, not a config file", "pass a ds_config JSON file to --config");
    return r;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    LoadResult r;
    r.config.file = path;
    r.diagnostics.error(path, "", "cannot open the config file (missing or unreadable)",
                        "check the path passed to --config");
    return r;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) {
    LoadResult r;
    r.diagnostics.error(path, "", "cannot read the config file (is it a directory?)", "pass a ds_config JSON file");
    return r;
  }
  return load_config_text(ss.str(), path, opts);
}

std::string Source::describe() const {
  switch (kind) {
    case SourceKind::Default: return "default";
    case SourceKind::File: return "file";
    case SourceKind::Derived: return "derived: " + detail;
    case SourceKind::Auto: return "auto <- " + detail;
    case SourceKind::Flag: return "flag " + detail;
    case SourceKind::Deprecated: return "deprecated <- " + detail;
  }
  return "?";
}

}  // namespace zt
