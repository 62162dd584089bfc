// `zerotrain check`: validate a ds_config without launching; print the resolved config with each
// value's source and the memory plan compared with this machine (or one JSON object with --json).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "runtime/cli/commands.h"
#include "runtime/config/auto_flags.h"
#include "runtime/config/config_echo.h"
#include "runtime/config/config_load.h"
#include "runtime/config/config_plan.h"
#include "runtime/model/model_config.h"
#include "runtime/plan/machine_probe.h"
#include "runtime/plan/memory_plan.h"

namespace zt {
namespace {

struct CheckArgs {
  std::string config;
  int world_size = 1;
  bool world_size_given = false;
  std::string params;
  std::string model;
  int ranks_per_node = 0;  // 0: min(world size, 8)
  AutoFlags flags;
  bool allow_unknown_keys = false;
  bool json = false;
};

nlohmann::json diag_list(const Diagnostics& d, Severity sev) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& x : d.all()) {
    if (x.severity != sev) continue;
    std::string msg = x.message;
    if (!x.value.empty()) msg = "value " + x.value + ": " + msg;
    if (!x.fix.empty()) msg += ". Fix: " + x.fix;
    a.push_back({{"path", x.path}, {"message", msg}, {"value", x.value}, {"problem", x.message}, {"fix", x.fix}});
  }
  return a;
}

int run_check(const CheckArgs& a) {
  Diagnostics d;
  LoadOptions opts;
  opts.world_size = a.world_size;
  opts.world_source = a.world_size_given ? WorldSizeSource::Flag : WorldSizeSource::Default;
  opts.flags = a.flags;
  opts.allow_unknown_keys = a.allow_unknown_keys;

  std::optional<ModelConfig> model;
  int64_t params = 0;
  if (!a.model.empty()) {
    model = model_preset(a.model);
    if (!model) {
      std::string names;
      for (const auto& n : model_preset_names()) names += (names.empty() ? "" : ", ") + n;
      d.error("--model", a.model, "unknown model preset", "use one of: " + names);
    } else {
      params = model->total_params();
      opts.model_hidden = model->dim;
    }
  } else if (!a.params.empty() && !parse_param_count(a.params, params)) {
    d.error("--params", a.params, "not a parameter count", "write it like 7e9, 7B, 1.5B, 124M or 350K");
  }

  LoadResult r = load_config(a.config, opts);
  d.append(r.diagnostics);
  const bool config_ok = r.valid();

  nlohmann::json memory = nullptr;
  std::string plan_text;
  if (config_ok && params > 0) {
    const int rpn = a.ranks_per_node > 0 ? a.ranks_per_node : std::min(a.world_size, 8);
    const MemoryPlan plan = make_memory_plan(plan_input(r.config, params, model ? &*model : nullptr, rpn));
    const MachineFacts facts = probe_machine();
    std::string nvme;
    const auto& z = r.config.zero_optimization;
    if (z.offload_optimizer.device.value == "nvme") nvme = z.offload_optimizer.nvme_path.value;
    else if (z.offload_param.device.value == "nvme") nvme = z.offload_param.nvme_path.value;
    d.append(preflight(plan, facts, nvme));
    memory = plan_to_json(plan);
    plan_text = plan_to_table(plan);
  } else if (params == 0 && d.error_count() == 0) {
    plan_text = "memory plan: skipped (pass --params N or --model NAME to size it)\n";
  }

  const bool valid = !d.has_errors();
  if (a.json) {
    nlohmann::json out;
    out["valid"] = valid;
    out["errors"] = diag_list(d, Severity::Error);
    out["warnings"] = diag_list(d, Severity::Warning);
    out["resolved"] = config_ok ? config_to_json(r.config) : nlohmann::json(nullptr);
    out["sources"] = config_ok ? config_sources_json(r.config) : nlohmann::json(nullptr);
    out["memory"] = memory;
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    if (config_ok) std::printf("%s\n", config_to_text(r.config).c_str());
    if (!plan_text.empty()) std::printf("%s\n", plan_text.c_str());
    std::fflush(stdout);  // keep the echo and the diagnostics in order on a terminal
    if (!d.all().empty()) std::fputs(d.format().c_str(), stderr);
    if (valid) {
      std::printf("%s: valid (%zu warning(s))\n", a.config.c_str(), d.warning_count());
    } else {
      std::fprintf(stderr, "%s: %zu error(s), %zu warning(s); nothing was started.\n", a.config.c_str(), d.error_count(),
                   d.warning_count());
    }
  }
  return valid ? 0 : kUserErrorExit;
}

}  // namespace

void register_check_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<CheckArgs>();
  CLI::App* cmd = app.add_subcommand("check", "validate a ds_config without launching: resolved config and memory plan");
  cmd->add_option("--config", args->config, "the ds_config.json to check")->required();
  cmd->add_option_function<int>(
      "--world-size",
      [args](const int& n) {
        args->world_size = n;
        args->world_size_given = true;
      },
      "data-parallel ranks to check the batch equation and plan for (default 1)");
  auto* params = cmd->add_option("--params", args->params, "model size for the memory plan: 7e9, 7B, 1.5B, 124M");
  auto* model = cmd->add_option("--model", args->model, "model preset for the memory plan (tiny, small, gpt2-124m, ...)");
  params->excludes(model);
  cmd->add_option("--ranks-per-node", args->ranks_per_node, "ranks sharing one host's RAM (default: min(world size, 8))");
  add_auto_flags(*cmd, args->flags);
  cmd->add_flag("--allow-unknown-keys", args->allow_unknown_keys, "report unknown keys as warnings, not errors");
  cmd->add_flag("--json", args->json, "print one JSON object on stdout instead of text");
  cmd->callback([args, &exit_code] { exit_code = run_check(*args); });
}

}  // namespace zt
