// The user-facing report of collected problems: at most kMaxShownDiagnostics lines plus a count of
// the rest, every control character escaped (a NUL byte never cuts a report short), and the JSON
// lists `zerotrain check --json` prints.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/common/diagnostics.h"

namespace zt {

inline constexpr size_t kMaxShownDiagnostics = 200;

// One line per diagnostic ("error: <path> = <value>: <message>. Fix: <fix>"), each prefixed with
// `prefix` ("rank 3: "), the first `max` only, then "... and N more ..." when some were left out.
std::string format_report(const Diagnostics& d, const std::string& prefix = "", size_t max = kMaxShownDiagnostics);

// Writes the whole string (fputs would stop at a NUL byte).
void write_all(std::FILE* to, const std::string& text);

// [{path, value, problem, fix, message}] of one severity, at most `max`, each string escaped.
nlohmann::json diagnostics_json(const Diagnostics& d, Severity sev, size_t max = kMaxShownDiagnostics);

// Control characters (and DEL) as \u00XX; everything else as it is.
std::string escape_controls(const std::string& s);

}  // namespace zt
