// walk_config: every key of every block checked against the schema and read into the Config, with
// DeepSpeed's own reading of each block deciding what an unknown key or an unfilled "auto" means.
#include "runtime/config/config_walk.h"

#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "runtime/config/config_schema.h"
#include "runtime/config/deepspeed_keys.h"
#include "runtime/config/json_strict.h"

namespace zt {

using json = nlohmann::json;

std::string join_list(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

std::string json_type_name(const json& v) {
  if (v.is_string()) return "a string";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number_float()) return "a floating-point number";
  if (v.is_number()) return "an integer";
  if (v.is_null()) return "null";
  if (v.is_array()) return "a list";
  return "an object";
}

std::string number_text(double v) {
  std::ostringstream o;
  o << v;
  return o.str();
}

namespace {

// An integral double that fits an int64 (1e5, 32.0), or nothing.
std::optional<int64_t> integral(const json& v) {
  if (!v.is_number_float()) return std::nullopt;
  const double x = v.get<double>();
  if (!std::isfinite(x) || std::floor(x) != x || std::fabs(x) >= 9.2e18) return std::nullopt;
  return static_cast<int64_t>(x);
}

std::string default_text(const FieldPtr& f) {
  return std::visit(
      [](auto* p) -> std::string {
        using T = std::decay_t<decltype(p->value)>;
        if constexpr (std::is_same_v<T, std::optional<int64_t>>) {
          return p->value ? std::to_string(*p->value) : "null";
        } else {
          return json(p->value).dump();
        }
      },
      f);
}

bool is_comment_key(const std::string& k) { return !k.empty() && (k[0] == '_' || k.rfind("//", 0) == 0); }

const char* ds_reading(DsBlock b) {
  switch (b) {
    case DsBlock::Dict: return "DeepSpeed would silently ignore it";
    case DsBlock::Model: return "DeepSpeed refuses it too (its config model for this block forbids extra keys)";
    case DsBlock::Kwargs: return "DeepSpeed refuses it too (it becomes an argument the constructor does not take)";
  }
  return "";
}

class Walker {
 public:
  Walker(Config& c, Diagnostics& d, const LoadOptions& o) : c_(c), d_(d), opt_(o) {}

  // `path` is the schema's name of the block, `shown` the one the file used ("bfloat16" for "bf16").
  void walk(const json& obj, const std::string& path, const std::string& shown) {
    BlockSchema s;
    if (!block_schema(c_, path, s)) return;
    if (s.present) *s.present = true;
    std::map<const void*, std::string> seen;  // field -> spelling that set it
    std::vector<std::pair<std::string, const json*>> subs;
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      const std::string& k = it.key();
      const std::string full = shown.empty() ? printable_key(k) : shown + "." + printable_key(k);
      const KeyBinding* b = find(s, k);
      if (b) {
        const void* fp = std::visit([](auto* p) { return static_cast<const void*>(p); }, b->field);
        auto prev = seen.find(fp);
        if (prev != seen.end()) {
          same_key_twice(shown, prev->second, k, s);
        } else {
          seen[fp] = k;
          apply(*b, it.value(), full, s);
        }
      } else if (is_sub_block(s, k)) {
        subs.emplace_back(k, &it.value());
      } else if (path == "optimizer.params" && k == "max_grad_norm") {
        d_.error(full, show_value(it.value()),
                 "gradient clipping is not an optimizer parameter (DeepSpeed refuses it too: it clips with the "
                 "top-level gradient_clipping)",
                 "remove optimizer.params.max_grad_norm and set \"gradient_clipping\": " + show_value(it.value()) +
                     " at the top level");
      } else if (const DsKey* ds = find_ds_key(path, k)) {
        known(*ds, it.value(), full);
      } else if (s.ds == DsBlock::Dict && is_comment_key(k)) {
        d_.warning(full, show_value(it.value()), "read as a comment (DeepSpeed ignores the key)",
                   "nothing to do; remove it to silence this note");
      } else {
        unknown(s, shown, k, it.value(), full);
      }
    }
    after_keys(path);
    for (auto& [k, v] : subs) {
      const std::string full = shown.empty() ? k : shown + "." + k;
      if (path.empty() && k == "bfloat16") {
        if (obj.contains("bf16")) {
          d_.error("bfloat16", "", "both \"bf16\" and its alias \"bfloat16\" are given",
                   "keep only \"bf16\" (the two spellings are the same block)");
          continue;
        }
        c_.bf16.spelling = "bfloat16";
      }
      if (v->is_null()) continue;  // DeepSpeed accepts null for an absent block
      if (path.empty() && k == "zero_optimization" && v->is_boolean()) {
        old_zero_format(v->get<bool>());
        continue;
      }
      if (!v->is_object()) {
        d_.error(full, show_value(*v), "must be a block (a JSON object {...}), got " + json_type_name(*v),
                 "write \"" + k + "\": { ... } or remove it");
        continue;
      }
      if (skip_.count(sub_block_path(path, k))) continue;
      walk(*v, sub_block_path(path, k), full);
    }
  }

  void finish() {
    if (unknown_count_ <= kMaxUnknownListed) return;
    const std::string msg = "and " + std::to_string(unknown_count_ - kMaxUnknownListed) +
                            " more unknown keys (the first " + std::to_string(kMaxUnknownListed) + " are listed)";
    if (opt_.allow_unknown_keys) d_.warning(c_.file, "", msg + " (ignored: --allow-unknown-keys)", "remove them");
    else d_.error(c_.file, "", msg, "remove them (or pass --allow-unknown-keys to only warn)");
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

  // "zero_optimization": true / false, the format before ZeRO stages had names.
  void old_zero_format(bool on) {
    auto& st = c_.zero_optimization.stage;
    st.value = on ? 1 : 0;
    st.present = true;
    st.source = {SourceKind::Deprecated, "\"zero_optimization\": " + std::string(on ? "true" : "false")};
    d_.warning("zero_optimization", on ? "true" : "false",
               std::string("deprecated format (a boolean); read as stage ") + (on ? "1" : "0") + ", as DeepSpeed does",
               "write \"zero_optimization\": {\"stage\": " + std::string(on ? "1" : "0") + "}");
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

  // A DeepSpeed key of the table: implemented elsewhere in DeepSpeed, a compatibility switch, or ignored.
  void known(const DsKey& k, const json& v, const std::string& full) {
    const std::string what = k.what;
    if (!ds_key_kind_ok(k, v)) {
      d_.error(full, show_value(v), "has the wrong type for DeepSpeed (" + what + "): got " + json_type_name(v),
               "write it as DeepSpeed expects, or remove it");
      return;
    }
    const bool off = ds_key_is_off(k, v);
    switch (k.cls) {
      case DsKeyClass::Ignored: {
        const std::string msg = "DeepSpeed does not read this key: " + what + ", so it has no effect there either";
        if (opt_.allow_unknown_keys) d_.warning(full, show_value(v), msg + " (ignored: --allow-unknown-keys)", "remove it");
        else d_.error(full, show_value(v), msg, "remove it, or move its settings to the key DeepSpeed reads "
                                                "(or pass --allow-unknown-keys to only warn)");
        return;
      }
      case DsKeyClass::Compat:
        if (!off)
          d_.warning(full, show_value(v), "accepted for compatibility: " + what + "; it changes nothing zerotrain computes",
                     "nothing to do; remove it to silence this note");
        return;
      case DsKeyClass::Unimplemented:
      case DsKeyClass::NotBuilt: {
        const bool math = k.cls == DsKeyClass::Unimplemented;
        if (off) {
          d_.warning(full, show_value(v), "DeepSpeed feature zerotrain does not implement (" + what + "); it is off here",
                     "nothing to do; remove it to silence this note");
        } else if (!math && opt_.allow_unknown_keys) {
          d_.warning(full, show_value(v),
                     "DeepSpeed feature zerotrain does not implement (" + what + "); training runs without it "
                     "(--allow-unknown-keys), with the same result",
                     "remove it or turn it off");
        } else {
          d_.error(full, show_value(v),
                   "DeepSpeed feature zerotrain does not implement (" + what + ")" +
                       (math ? "; it changes what training computes, so --allow-unknown-keys does not skip it" : ""),
                   math ? "remove it or turn it off to train with zerotrain"
                        : "remove it or turn it off, or pass --allow-unknown-keys to train without it");
        }
        return;
      }
    }
  }

  void unknown(const BlockSchema& s, const std::string& shown, const std::string& k, const json& v, const std::string& full) {
    if (++unknown_count_ > kMaxUnknownListed) return;  // counted; finish() reports how many
    const auto valid = valid_keys(s);
    std::string msg = "unknown key";
    if (!shown.empty()) msg += " in block \"" + shown + "\"";
    std::string near;
    std::vector<std::string> elsewhere;
    if (k.size() <= 64) {  // no typo is longer; edit distances of huge keys would cost seconds
      auto candidates = valid;
      for (const auto& d : ds_keys_of(s.path)) candidates.push_back(d);
      near = suggest_key(k, candidates);
      elsewhere = blocks_with_key(c_, k, s.path);
    }
    if (!near.empty()) msg += " (did you mean \"" + near + "\"?)";
    if (near.empty() && !elsewhere.empty()) msg += "; it is a key of " + join_list(elsewhere, " or ");
    msg += std::string("; ") + ds_reading(s.ds);
    const std::string fix = (near.empty() ? std::string() : "rename it to \"" + near + "\"; ") +
                            "valid keys here: " + join_list(valid);
    if (opt_.allow_unknown_keys) {
      d_.warning(full, show_value(v), msg + " (ignored: --allow-unknown-keys)", fix);
    } else {
      d_.error(full, show_value(v), msg, fix + " (or pass --allow-unknown-keys to only warn)");
    }
  }

  // Block-level checks that must happen before sub-blocks are walked (the type picks params' keys).
  void after_keys(const std::string& path) {
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
        d_.error(path, "", "the " + block + " block has no \"type\"", "add \"type\": one of " + join_list(ok));
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
    const std::string near = type.value.size() <= 64 ? suggest_key(type.value, ok) : "";
    if (!near.empty() && near != type.value) msg += " (did you mean \"" + near + "\"?)";
    d_.error(path, show_value(json(type.value)), msg, "use one of: " + join_list(ok));
    skip_.insert(block + ".params");
  }

  template <class T>
  void set(Field<T>& f, T v, const KeyBinding& b, std::string note = {}) {
    f.value = std::move(v);
    f.present = true;
    f.is_auto = false;
    f.invalid = false;
    if (b.deprecated) {
      f.source = {SourceKind::Deprecated, b.key};
    } else {
      f.source = {SourceKind::File, std::move(note)};
    }
  }

  void type_error(const KeyBinding& b, const json& v, const std::string& full, std::string extra = {},
                  std::string fix = {}) {
    std::string msg = "must be " + std::string(kind_name(b.kind)) + ", got " + json_type_name(v);
    if (fix.empty()) fix = "write " + std::string(kind_name(b.kind));
    if (b.kind == Kind::Int || b.kind == Kind::Count || b.kind == Kind::Number || b.kind == Kind::NullableInt) {
      if (v.is_string()) {
        fix = "remove the quotes";
        if (b.accepts_auto) fix += " (or write \"auto\")";
      }
    } else if (b.kind == Kind::Bool && v.is_string()) {
      fix = "write true or false without quotes";
    }
    if (!extra.empty()) msg += " (" + extra + ")";
    d_.error(full, show_value(v), msg, fix);
    std::visit([](auto* p) { p->invalid = true; }, b.field);
  }

  // "auto" that nothing fills: what DeepSpeed does with it depends on how it reads the block.
  void unfilled_auto(const KeyBinding& b, const std::string& full, const BlockSchema& s) {
    if (s.ds == DsBlock::Model) {
      const std::string def = default_text(b.field);
      std::string why = "nothing fills this \"auto\" (the HF Trainer fills only the batch, optimizer, scheduler, "
                        "clipping, precision and stage-3 bucket keys) and DeepSpeed's config model drops it, so "
                        "DeepSpeed's default " + def + " applies";
      if (b.key.find("gather_16bit_weights_on_model_save") != std::string::npos ||
          b.key.find("gather_fp16_weights_on_model_save") != std::string::npos)
        why = "Accelerate fills it from zero3_save_16bit_model (default false), the HF Trainer leaves it, and "
              "DeepSpeed's config model drops it: " + def;
      std::visit([&](auto* p) { p->source = {SourceKind::Auto, "DeepSpeed's default " + def + " (unfilled \"auto\")"}; },
                 b.field);
      d_.warning(full, "\"auto\"", why, "write the value you want, or remove the key");
      return;
    }
    d_.error(full, "\"auto\"",
             "\"auto\" is not filled for this key: only the HF Trainer's keys take \"auto\" (configs/README.md lists "
             "them), and DeepSpeed would use the string \"auto\" itself as the value",
             "write " + std::string(kind_name(b.kind)));
    std::visit([](auto* p) { p->invalid = true; }, b.field);
  }

  void apply(const KeyBinding& b, const json& v, const std::string& full, const BlockSchema& s) {
    if (b.key == "thread_count") {
      d_.warning(full, show_value(v),
                 "renamed intra_op_parallelism in DeepSpeed 0.16.4 (later versions ignore thread_count and use one "
                 "I/O thread); zerotrain reads it as intra_op_parallelism",
                 "rename it to \"intra_op_parallelism\"");
    } else if (b.deprecated && !b.hidden) {
      d_.warning(full, show_value(v), "deprecated spelling; read as \"" + b.canonical + "\"",
                 "rename it to \"" + b.canonical + "\"");
    } else if (b.hidden) {
      d_.warning(full, show_value(v), "deprecated key; read as " + b.canonical, "use " + b.canonical + " instead");
    }
    const bool is_auto = v.is_string() && v.get<std::string>() == "auto";
    if (is_auto && (b.kind != Kind::String || s.ds == DsBlock::Model)) {
      if (!b.accepts_auto) return unfilled_auto(b, full, s);
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
        if (const auto n = integral(v)) {
          if (b.exact_int)
            return type_error(b, v, full, "DeepSpeed requires a Python int here and raises ValueError for " + show_value(v),
                              "write " + std::to_string(*n));
          return set(*f, *n, b, "read " + show_value(v) + " as " + std::to_string(*n));
        }
        if (v.is_number_float()) return type_error(b, v, full, "not a whole number", "write a whole number");
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
      case Kind::String: return apply_string(b, v, full);
      case Kind::Betas: {
        auto* f = std::get<Field<std::vector<double>>*>(b.field);
        if (!v.is_array() || v.size() != 2 || !v[0].is_number() || !v[1].is_number())
          return type_error(b, v, full);
        return set(*f, std::vector<double>{v[0].get<double>(), v[1].get<double>()}, b);
      }
      case Kind::NullableInt: {
        auto* f = std::get<Field<std::optional<int64_t>>*>(b.field);
        if (v.is_null()) return set(*f, std::optional<int64_t>{}, b);
        if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)) return type_error(b, v, full, "too large");
        if (v.is_number_integer() && !(v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)))
          return set(*f, std::optional<int64_t>{v.get<int64_t>()}, b);
        if (const auto n = integral(v)) return set(*f, std::optional<int64_t>{*n}, b, "read " + show_value(v) + " as " + std::to_string(*n));
        if (v.is_number_float()) return type_error(b, v, full, "not a whole number", "write a whole number");
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

  void apply_string(const KeyBinding& b, const json& v, const std::string& full) {
    auto* f = std::get<Field<std::string>*>(b.field);
    if (v.is_null() && b.nullable) return set(*f, f->value, b, "null: the default");
    if (!v.is_string()) return type_error(b, v, full);
    std::string s = v.get<std::string>();
    if (b.choices.empty()) return set(*f, s, b);
    for (const auto& [spelling, canonical] : b.choice_aliases)
      if (s == spelling) return set(*f, canonical, b, "\"" + s + "\" is DeepSpeed's other spelling of \"" + canonical + "\"");
    for (const auto& ch : b.choices) {
      if (ch == s) return set(*f, s, b);
      if (b.choices_ignore_case && edit_distance(ch, s) == 0 && ch.size() == s.size())
        return set(*f, ch, b, "\"" + s + "\" (DeepSpeed ignores the case)");
    }
    const std::string near = s.size() <= 64 ? suggest_key(s, b.choices) : "";
    if (!b.choice_fallback.empty()) {
      d_.warning(full, show_value(v),
                 "not one of " + join_list(b.choices) + "; DeepSpeed warns and uses \"" + b.choice_fallback +
                     "\", and so does zerotrain" + (near.empty() ? "" : " (did you mean \"" + near + "\"?)"),
                 "write one of: " + join_list(b.choices));
      return set(*f, b.choice_fallback, b, "\"" + printable_key(s) + "\" is not a known value: DeepSpeed's fallback");
    }
    d_.error(full, show_value(v), "not one of the accepted values" + (near.empty() ? "" : " (did you mean \"" + near + "\"?)"),
             "use one of: " + join_list(b.choices));
    f->invalid = true;
  }

  Config& c_;
  Diagnostics& d_;
  const LoadOptions& opt_;
  std::set<std::string> skip_;
  size_t unknown_count_ = 0;
};

}  // namespace

void walk_config(const json& doc, Config& c, const LoadOptions& opts, Diagnostics& d) {
  Walker w(c, d, opts);
  w.walk(doc, "", "");
  w.finish();
}

}  // namespace zt
