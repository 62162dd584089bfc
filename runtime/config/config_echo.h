// The resolved-config echo: every value with its source, as text for people and as JSON for
// `zerotrain check --json` and logs.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "runtime/config/config.h"

namespace zt {

// One line per key: "zero_optimization.stage = 2  (file)". Blocks absent from the file are shown
// as one line each ("aio: defaults") unless `all` is true.
std::string config_to_text(const Config& c, bool all = false);
// The run's length and the schedule's, each with where it came from: "20 steps (flag --steps) of a
// 1000-step schedule (scheduler.params.total_num_steps: file)", "200 steps (default: --steps not
// given); WarmupLR has no end", ...
std::string describe_run_length(const Config& c);
// The resolved values as a nested object in ds_config shape (plus "world_size").
nlohmann::json config_to_json(const Config& c);
// {"<path>": "<source>"} for every key.
nlohmann::json config_sources_json(const Config& c);

}  // namespace zt
