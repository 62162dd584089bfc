// The resolved-config echo, walking the same schema the loader uses.
#include "runtime/config/config_echo.h"

#include <sstream>

#include "runtime/config/config_schema.h"

namespace zt {
namespace {

using json = nlohmann::json;

json value_json(const FieldPtr& f) {
  return std::visit(
      [](auto* p) -> json {
        using T = std::decay_t<decltype(p->value)>;
        if constexpr (std::is_same_v<T, std::optional<int64_t>>) {
          return p->value ? json(*p->value) : json(nullptr);
        } else {
          return json(p->value);
        }
      },
      f);
}

Source source_of(const FieldPtr& f) {
  return std::visit([](auto* p) { return p->source; }, f);
}

// Visit every echoed key: (block path, key, binding).
template <class Fn>
void each_key(Config& c, Fn fn) {
  for (const auto& path : block_paths(c)) {
    if (path == "optimizer.params" && !c.optimizer.present && c.optimizer.type.value.empty()) continue;
    if ((path == "scheduler" || path == "scheduler.params") && c.scheduler.type.value.empty()) continue;
    BlockSchema s;
    if (!block_schema(c, path, s)) continue;
    for (const auto& b : s.keys) {
      if (b.hidden || !b.canonical.empty()) continue;  // aliases echo under their canonical key
      fn(path, b);
    }
  }
}

std::string dotted(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

}  // namespace

std::string describe_run_length(const Config& c) {
  const int64_t n = c.run_steps.value;
  const Source& from = c.run_steps.source;
  std::string out = std::to_string(n) + " step" + (n == 1 ? "" : "s") + " (" +
                    (from.kind == SourceKind::Default ? "the default: " + from.detail : from.describe()) + ")";
  const std::string& type = c.scheduler.type.value;
  if (const auto total = c.schedule_steps()) {
    const std::string from = "scheduler.params.total_num_steps: " + c.scheduler.total_num_steps.source.describe();
    if (*total == n)
      out += ", the whole " + std::to_string(*total) + "-step schedule (" + from + ")";
    else if (*total > n)
      out += " of a " + std::to_string(*total) + "-step schedule (" + from + "); --load continues it";
    else
      out += " past a " + std::to_string(*total) + "-step schedule (" + from + ")";
  } else if (type.empty()) {
    out += "; no scheduler: constant learning rate";
  } else {
    out += "; " + type + " has no end (" + (type == "OneCycle" ? "it keeps decaying after its cycle" : "it holds its peak after warmup") + ")";
  }
  return out;
}

std::string config_to_text(const Config& in, bool all) {
  Config c = in;
  std::ostringstream o;
  o << "resolved config (" << c.file << "):\n";
  o << "  world_size = " << c.world_size.value << "  (" << c.world_size.source.describe() << ")\n";
  if (c.run_steps.value > 0) o << "  run length = " << describe_run_length(c) << "\n";
  std::string last_block = "?";
  each_key(c, [&](const std::string& path, const KeyBinding& b) {
    BlockSchema s;
    block_schema(c, path, s);
    const bool block_present = path.empty() || (s.present && *s.present);
    if (!all && !block_present) {
      if (path != last_block && path.find('.') == std::string::npos) o << "  " << path << ": all defaults\n";
      last_block = path;
      return;
    }
    last_block = path;
    o << "  " << dotted(path, b.key) << " = " << value_json(b.field).dump() << "  (" << source_of(b.field).describe() << ")\n";
  });
  if (c.scheduler.type.value.empty()) o << "  scheduler: none (constant learning rate)\n";
  return o.str();
}

json config_to_json(const Config& in) {
  Config c = in;
  json out = json::object();
  out["world_size"] = c.world_size.value;
  each_key(c, [&](const std::string& path, const KeyBinding& b) {
    json* node = &out;
    std::string rest = path;
    while (!rest.empty()) {
      const auto dot = rest.find('.');
      node = &(*node)[rest.substr(0, dot)];
      rest = dot == std::string::npos ? "" : rest.substr(dot + 1);
    }
    (*node)[b.key] = value_json(b.field);
  });
  if (c.bf16.spelling == "bfloat16") out["bf16"]["spelled_as"] = "bfloat16";
  return out;
}

json config_sources_json(const Config& in) {
  Config c = in;
  json out = json::object();
  out["world_size"] = c.world_size.source.describe();
  each_key(c, [&](const std::string& path, const KeyBinding& b) { out[dotted(path, b.key)] = source_of(b.field).describe(); });
  return out;
}

}  // namespace zt
