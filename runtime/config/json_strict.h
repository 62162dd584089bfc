// Strict JSON reading for configs: parses with nlohmann/json's SAX interface so that duplicate
// keys are reported (with their path) instead of silently keeping the last one.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "runtime/common/diagnostics.h"

namespace zt {

// Parses `text` (read from `file`) into `out`. Syntax errors are reported as "<file>:<line>:<col>"
// with the parser's message; every duplicate key is an error at its JSON path. Returns false when
// the text is not JSON (out is then unusable); duplicates alone still return true.
bool parse_json_strict(const std::string& text, const std::string& file, nlohmann::json& out, Diagnostics& diags);

// "<line>:<column>" (1-based) of a byte offset in text.
std::string line_column(const std::string& text, size_t offset);

// A JSON value as the user would write it, shortened for messages.
std::string show_value(const nlohmann::json& v);

}  // namespace zt
