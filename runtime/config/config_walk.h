// walk_config: reads a parsed ds_config document into a Config, block by block against the schema:
// types, "auto", aliases and deprecated spellings, DeepSpeed keys zerotrain does not implement, and
// unknown keys (with did-you-mean and what DeepSpeed itself would do with them).
#pragma once

#include <nlohmann/json.hpp>

#include "runtime/common/diagnostics.h"
#include "runtime/config/config.h"
#include "runtime/config/config_load.h"

namespace zt {

// After the first kMaxUnknownListed unknown keys, the rest are only counted (one line says how
// many), so a file of 300,000 stray keys is read in linear time and reported in a few lines.
inline constexpr size_t kMaxUnknownListed = 100;

void walk_config(const nlohmann::json& doc, Config& c, const LoadOptions& opts, Diagnostics& d);

// Messages shared with the later load steps.
std::string join_list(const std::vector<std::string>& v, const std::string& sep = ", ");
std::string json_type_name(const nlohmann::json& v);
// A number as a message shows it: 0.001, 1e-08, 5e+08 (the shortest round trip of iostream).
std::string number_text(double v);
// A string value as a message quotes it: "nvme".
inline std::string quoted_text(const std::string& v) { return "\"" + v + "\""; }

}  // namespace zt
