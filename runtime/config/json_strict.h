// Strict JSON reading for configs: parses with nlohmann/json's SAX interface so that duplicate
// keys are reported (with their path) and nesting is bounded, and prints values and keys safely.
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/common/diagnostics.h"

namespace zt {

// Deepest nesting of objects and arrays a config may have. Real ds_configs nest at most about six
// levels; Python's json reader (DeepSpeed's) stops with a RecursionError near 1000.
inline constexpr int kMaxConfigDepth = 100;

// Parses `text` (read from `file`) into `out`. Syntax errors are reported as "<file>:<line>:<col>"
// with the parser's message; nesting deeper than kMaxConfigDepth is refused at the offset where it
// happens, before any value is built; every duplicate key is an error at its JSON path (after the
// first 100 duplicates only a count is kept). Returns false when the text is not usable JSON (out is
// then unusable); duplicates alone still return true.
bool parse_json_strict(const std::string& text, const std::string& file, nlohmann::json& out, Diagnostics& diags);

// "<line>:<column>" (1-based) of a byte offset in text.
std::string line_column(const std::string& text, size_t offset);

// A JSON value as the user would write it, at most about 60 characters ("..." when cut). Never
// serialises more than it shows, never recurses more than a few levels, and escapes control
// characters (a NUL byte prints as \u0000).
std::string show_value(const nlohmann::json& v);

// A key as it can be printed in a path: control characters escaped, and a key longer than 64 bytes
// cut to its first 48 and its length ("aaaa...(10485760 bytes)").
std::string printable_key(const std::string& key);

}  // namespace zt
