// `zerotrain env`: registers the subcommand that prints the environment report (text, or one JSON
// object with --json) — the ds_report of zerotrain.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>

#include "runtime/cli/subcommands.h"
#include "runtime/plan/env_report.h"

namespace zt {

void register_env_command(CLI::App& app, int& exit_code) {
  CLI::App* env = app.add_subcommand("env", "Print versions, components, GPUs, CPU SIMD level and host RAM");
  auto json = std::make_shared<bool>(false);
  env->add_flag("--json", *json, "Print one JSON object instead of the text report");
  env->callback([json, &exit_code]() {
    exit_code = 0;
    if (leaves_it_to_rank0()) return;
    const EnvReport r = collect_env_report();
    if (*json) {
      std::printf("%s\n", env_report_to_json(r).dump().c_str());
    } else {
      std::fputs(env_report_to_text(r).c_str(), stdout);
    }
    std::fflush(stdout);
    exit_code = 0;
  });
}

}  // namespace zt
