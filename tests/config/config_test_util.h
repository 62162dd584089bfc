// Helpers for the config tests: load from text, and find a diagnostic by path and message text.
#pragma once

#include <string>

#include "runtime/config/config_load.h"

namespace zt::test {

inline LoadResult load(const std::string& text, LoadOptions o = {}) { return load_config_text(text, "test.json", o); }

// The first diagnostic of `sev` at `path` whose message (or fix) contains `text`, or nullptr.
inline const Diagnostic* find(const LoadResult& r, const std::string& path, const std::string& text,
                              Severity sev = Severity::Error) {
  for (const auto& d : r.diagnostics.all())
    if (d.severity == sev && d.path == path &&
        (d.message.find(text) != std::string::npos || d.fix.find(text) != std::string::npos))
      return &d;
  return nullptr;
}

inline std::string dump(const LoadResult& r) { return r.diagnostics.format(); }

}  // namespace zt::test
