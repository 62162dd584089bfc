// `zerotrain check`: validates a ds_config without launching (the verdict does not depend on the
// machine it runs on: exit 0 valid, 2 not), then, in its own section, whether the memory plan fits
// this machine or the target the flags describe (exit 3 when a valid config does not fit).
#include <CLI/CLI.hpp>
#include <cctype>
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "kernels/backend.h"
#include "runtime/cli/fit_check.h"
#include "runtime/cli/subcommands.h"
#include "runtime/config/auto_flags.h"
#include "runtime/config/config_echo.h"
#include "runtime/config/config_load.h"
#include "runtime/config/config_plan.h"
#include "runtime/model/causal_lm.h"
#include "runtime/config/report.h"
#include "runtime/engine/engine_plan.h"
#include "runtime/train/engine_config.h"
#include "runtime/model/model_config.h"
#include "runtime/plan/gpu_memory.h"
#include "runtime/plan/machine_probe.h"
#include "collectives/comm_options.h"
#include "runtime/plan/memory_plan.h"

namespace zt {
namespace {

constexpr int kDoesNotFitExit = 3;

struct CheckArgs {
  std::string config;
  int world_size = 1;
  bool world_size_given = false;
  std::string params;
  std::string model;
  std::optional<int64_t> hidden_size;
  std::string backend = "auto";
  int ranks_per_node = 0;  // 0: min(world size, 8)
  std::string gpu_memory, host_ram;  // the target machine ("" = this machine)
  std::string save_dir;              // the run will save checkpoints (--save): plan its snapshot
  AutoFlags flags;
  bool allow_unknown_keys = false;
  bool json = false;
};

int run_check(const CheckArgs& a) {
  Diagnostics d;
  LoadOptions opts;
  opts.world_size = a.world_size;
  opts.world_source = a.world_size_given ? WorldSizeSource::Flag : WorldSizeSource::Default;
  opts.flags = a.flags;
  opts.allow_unknown_keys = a.allow_unknown_keys;
  opts.probe_paths = false;  // validity never depends on this machine; the paths are checked under "fits"
  std::string backend_why = "--backend " + a.backend;
  opts.backend = backend_of(a.backend, backend_why);

  const ModelSize size = model_size_of(a.model, a.params, d);
  const std::optional<ModelConfig>& model = size.model;
  const int64_t params = size.params;
  if (model) opts.model_hidden = model->dim, opts.model = model;
  if (a.hidden_size) {
    if (*a.hidden_size < 1) d.error("--hidden-size", std::to_string(*a.hidden_size), "must be at least 1", "pass the model's hidden size");
    else if (model && model->dim != *a.hidden_size)
      d.error("--hidden-size", std::to_string(*a.hidden_size), "differs from --model " + a.model + "'s hidden size " +
                                                                   std::to_string(model->dim),
              "drop --hidden-size (the preset gives it)");
    else opts.model_hidden = *a.hidden_size;
  }
  opts.size_without_shape = !a.params.empty() && !opts.model_hidden;

  LoadResult r = load_config(a.config, opts);
  d.append(r.diagnostics);
  const bool valid = !d.has_errors();
  FitReport fit;
  if (valid) fit = check_fit(FitTarget{a.world_size, a.ranks_per_node, a.gpu_memory, a.host_ram, a.save_dir}, r.config, params, model ? &*model : nullptr, opts.backend, d);
  const bool fits = valid && !fit.diagnostics.has_errors() && !d.has_errors();
  const int rc = !valid || d.has_errors() ? kUserErrorExit : fits ? 0 : kDoesNotFitExit;

  if (a.json) {
    nlohmann::json out;
    out["valid"] = valid;
    out["fits"] = valid && fit.assessed ? nlohmann::json(fits) : nlohmann::json(nullptr);
    out["backend"] = compute_backend_name(opts.backend);
    out["errors"] = diagnostics_json(d, Severity::Error);
    out["warnings"] = diagnostics_json(d, Severity::Warning);
    out["fit_target"] = fit.assessed ? nlohmann::json(fit.target) : nlohmann::json(nullptr);
    out["fit_errors"] = diagnostics_json(fit.diagnostics, Severity::Error);
    out["fit_warnings"] = diagnostics_json(fit.diagnostics, Severity::Warning);
    out["resolved"] = valid ? config_to_json(r.config) : nlohmann::json(nullptr);
    out["sources"] = valid ? config_sources_json(r.config) : nlohmann::json(nullptr);
    out["memory"] = fit.memory;
    std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return rc;
  }
  if (valid) std::printf("%s  backend = %s  (%s)\n\n", config_to_text(r.config).c_str(), compute_backend_name(opts.backend),
                         backend_why.c_str());
  std::fflush(stdout);  // keep the echo and the diagnostics in order on a terminal
  write_all(stderr, format_report(d));
  if (!valid) {
    std::fprintf(stderr, "%s: %zu error(s), %zu warning(s); nothing was started.\n", a.config.c_str(), d.error_count(),
                 d.warning_count());
    return rc;
  }
  std::printf("%s: valid (%zu warning(s))\n\n", a.config.c_str(), d.warning_count());
  std::printf("== fits %s?\n%s", fit.assessed ? fit.target.c_str() : "", fit.plan_text.c_str());
  std::fflush(stdout);
  write_all(stderr, format_report(fit.diagnostics));
  if (fit.assessed)
    std::printf("%s: %s %s\n", a.config.c_str(), fits ? "fits" : "valid, but does not fit", fit.target.c_str());
  return rc;
}

}  // namespace

void register_check_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<CheckArgs>();
  CLI::App* cmd = app.add_subcommand(
      "check", "validate a ds_config without launching (exit 0 valid, 2 invalid), then whether its memory plan fits "
               "this machine or the target given by --ranks-per-node/--gpu-memory/--host-ram (exit 3 when it does not)");
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
  cmd->add_option_function<int64_t>(
      "--hidden-size", [args](const int64_t& h) { args->hidden_size = h; },
      "the model's hidden size: resolves the stage-3 bucket \"auto\"s (given by --model)");
  cmd->add_option("--backend", args->backend, "the backend the run will use: auto (as the run picks it here), cpu, cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--ranks-per-node", args->ranks_per_node, "ranks sharing one host's RAM (default: min(world size, 8))");
  cmd->add_option("--gpu-memory", args->gpu_memory, "check the plan against GPUs of this size (e.g. 80G) instead of this machine's");
  cmd->add_option("--save", args->save_dir,
                  "plan for a run that saves checkpoints into DIR: each rank's snapshot of its master and moments in "
                  "host RAM (the folder is not touched)");
  cmd->add_option("--host-ram", args->host_ram, "check the plan against this much host RAM per node (e.g. 512G) instead of this machine's");
  add_auto_flags(*cmd, args->flags);
  cmd->add_flag("--allow-unknown-keys", args->allow_unknown_keys, "report unknown keys as warnings, not errors");
  cmd->add_flag("--json", args->json, "print one JSON object on stdout instead of text");
  cmd->callback([args, &exit_code] { exit_code = leaves_it_to_rank0() ? 0 : run_check(*args); });
}

}  // namespace zt
