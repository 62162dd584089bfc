// `zerotrain tune`: the autotuner's command line. It reads the base ds_config and its autotuning
// block, plans every (stage, offload) cell with check's memory plan at 90% of the target's memory
// (runtime/cli/fit_check.h), runs the trials as zerotrain jobs under a launcher
// (runtime/tune/trial_process.h) in the Tuner's order (runtime/tune/tuner.h), and writes the results
// (runtime/tune/tune_report.h). With --params, or --plan-only, it plans and lists the trials only.
#include <CLI/CLI.hpp>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdlib>

#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/stage_traits.h"
#include "build_info.h"
#include "runtime/cli/fit_check.h"
#include "runtime/cli/subcommands.h"
#include "runtime/config/auto_flags.h"
#include "runtime/config/config_plan.h"
#include "runtime/config/json_strict.h"
#include "runtime/config/report.h"
#include "runtime/tune/trial_process.h"
#include "runtime/tune/tune_report.h"
#include "runtime/tune/tuner.h"

namespace zt {
namespace {

struct TuneArgs {
  std::string config, model, params, backend = "auto", gpu_memory, host_ram, stages, offload, out, launcher = "mpirun";
  std::optional<int64_t> hidden_size, max_train_batch_size;
  int world_size = 1, ranks_per_node = 0, steps = 12, repeats = 2;
  double trial_timeout = 300;
  bool keep_global_batch = false, plan_only = false;
  std::vector<std::string> extra;
  AutoFlags flags;
};

// The planner: each trial's ds_config validated as the run would load it, then check's plan at 90%.
class ConfigPlanner : public TunePlanner {
 public:
  ConfigPlanner(const TuneArgs& a, nlohmann::json base, std::optional<ModelConfig> model, int64_t params,
                ComputeBackend backend)
      : a_(a), base_(std::move(base)), model_(std::move(model)), params_(params), backend_(backend) {}

  PlanVerdict assess(const TrialSpec& t) override {
    const std::string key = t.name();
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    PlanVerdict v;
    const LoadResult r = load(t, a_.config + " as trial " + key);
    Diagnostics d = r.diagnostics;
    if (!d.has_errors()) {
      FitTarget target{a_.world_size, a_.ranks_per_node, a_.gpu_memory, a_.host_ram, "", 0.9};
      const FitReport f = check_fit(target, r.config, params_, model_ ? &*model_ : nullptr, backend_, d);
      d.append(f.diagnostics);
      if (f.plan) v.peak_bytes = f.plan->device_total();
      v.wire_bytes_per_step = f.wire_bytes_per_step;
      v.offload_bytes_per_step = f.offload_bytes_per_step;
    }
    v.fits = !d.has_errors();
    for (const Diagnostic& x : d.all())
      if (x.severity == Severity::Error) {
        v.reason = format_diagnostic(x);
        break;
      }
    const double seq = model_ ? double(model_->seq_len) : 0;
    v.tokens_per_step = double(t.micro_batch * t.gas) * seq;
    v.flops_per_token = 6.0 * double(params_) + (model_ ? 12.0 * model_->layers * seq * model_->dim : 0.0);
    memo_[key] = v;
    return v;
  }

  // The trial's ds_config loaded as its run will load it; `name` stands for the file in messages.
  LoadResult load(const TrialSpec& t, const std::string& name) const {
    LoadOptions opts;
    opts.world_size = a_.world_size;
    opts.world_source = WorldSizeSource::Flag;
    opts.flags = a_.flags;
    opts.probe_paths = false;
    opts.backend = backend_;
    if (model_) opts.model_hidden = model_->dim, opts.model = model_;
    else if (a_.hidden_size) opts.model_hidden = *a_.hidden_size;
    opts.size_without_shape = !model_ && !a_.hidden_size;
    return load_config_text(trial_config(base_, t, a_.world_size).dump(), name, opts);
  }

 private:
  const TuneArgs& a_;
  nlohmann::json base_;
  std::optional<ModelConfig> model_;
  int64_t params_;
  ComputeBackend backend_;
  std::map<std::string, PlanVerdict> memo_;
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s + sep) {
    if (c == sep) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else if (c != ' ' || sep != ' ') {
      cur += c;
    }
  }
  return out;
}

// The exit code when no cell fits (as `check` exits 3 for a plan that does not fit).
constexpr int kNothingFitsExit = 3;

// The CLI's one piece of global state: the signal that asked the tune to stop (0: none).
volatile std::sig_atomic_t g_stop_signal = 0;

// SIGINT and SIGTERM set g_stop_signal while a tune runs trials; the previous handlers come back after.
class StopSignals {
 public:
  StopSignals() {
    struct sigaction sa {};
    sa.sa_handler = [](int s) { g_stop_signal = s; };
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGINT, &sa, &old_int_);
    ::sigaction(SIGTERM, &sa, &old_term_);
  }
  ~StopSignals() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  struct sigaction old_int_ {}, old_term_ {};
};

bool on_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  for (const auto& dir : split(path ? path : "", ':'))
    if (::access((dir + "/" + name).c_str(), X_OK) == 0) return true;
  return false;
}

// Creates the folder (and its parents) if needed and checks that a file can be written in it.
bool writable_dir(const std::string& dir) {
  if (!make_dirs(dir)) return false;
  const std::string probe = dir + "/.zt_tune_write_probe";
  std::FILE* f = std::fopen(probe.c_str(), "w");
  if (!f) return false;
  const bool wrote = std::fputs("ok\n", f) >= 0;
  const bool ok = std::fclose(f) == 0 && wrote;
  std::remove(probe.c_str());
  return ok;
}

// --plan-only runs nothing.
class NullRunner : public TrialRunner {
 public:
  TrialOutcome run(const TrialSpec&, int) override {
    TrialOutcome o;
    o.status = TrialStatus::Skipped;
    return o;
  }
};

nlohmann::json read_base(const std::string& path, Diagnostics& d) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    d.error("--config", path, "cannot be opened", "pass the path of an existing ds_config.json");
    return nullptr;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  if (text.size() > kMaxConfigBytes) {
    d.error("--config", path, "is larger than a ds_config can be (16 MiB)", "pass the ds_config.json, not another file");
    return nullptr;
  }
  nlohmann::json doc;
  if (!parse_json_strict(text, path, doc, d)) return nullptr;
  if (!doc.is_object()) {
    d.error(path, show_value(doc), "a ds_config must be a JSON object", "wrap the settings in { }");
    return nullptr;
  }
  return doc;
}


// The stages to tune: --stages, else DeepSpeed's reading of zero_optimization.stage (a number, a
// list, or "all"; absent: stage 0 alone, as DeepSpeed's tuner).
std::vector<int> stages_of(const TuneArgs& a, const nlohmann::json& base, Diagnostics& d, std::string& why) {
  std::vector<int> out;
  auto add = [&](const std::string& where, const nlohmann::json& v) {
    if (v.is_number_integer() && is_zero_stage(v.get<int64_t>())) out.push_back(v.get<int>());
    else d.error(where, show_value(v), "not a ZeRO stage", "use 0, 1, 2 or 3");
  };
  if (!a.stages.empty()) {
    why = "--stages";
    for (const auto& s : split(a.stages, ',')) {
      if (s == "all") {
        for (int i = 0; i <= 3; ++i) out.push_back(i);
        continue;
      }
      const nlohmann::json v = nlohmann::json::parse(s, nullptr, false);
      add("--stages", v.is_discarded() ? nlohmann::json(s) : v);
    }
    return out;
  }
  const auto zo = base.find("zero_optimization");
  const nlohmann::json st = zo != base.end() && zo->is_object() && zo->contains("stage") ? (*zo)["stage"] : nlohmann::json();
  if (st.is_null()) {
    why = "zero_optimization.stage is absent: DeepSpeed's tuner then tunes stage 0 alone (pass --stages 0,1,2,3 for all)";
    return {0};
  }
  why = "zero_optimization.stage in " + a.config;
  if (st.is_string() && st.get<std::string>() == "all") return {0, 1, 2, 3};
  if (st.is_array()) {
    for (const auto& v : st) add("zero_optimization.stage", v);
  } else {
    add("zero_optimization.stage", st);
  }
  return out;
}

std::vector<OffloadDevice> offloads_of(const TuneArgs& a, const nlohmann::json& base, Diagnostics& d) {
  std::vector<OffloadDevice> out;
  std::vector<std::string> names = split(a.offload, ',');
  if (names.empty()) {  // the config's own choice
    const auto zo = base.find("zero_optimization");
    std::string dev = "none";
    if (zo != base.end() && zo->is_object() && zo->contains("offload_optimizer") && (*zo)["offload_optimizer"].is_object())
      dev = (*zo)["offload_optimizer"].value("device", std::string("none"));
    names = {dev};
  }
  for (const auto& n : names) {
    if (n == "none") out.push_back(OffloadDevice::None);
    else if (n == "cpu") out.push_back(OffloadDevice::CPU);
    else if (n == "nvme") out.push_back(OffloadDevice::NVMe);
    else d.error("--offload", n, "not an offload device", "use none, cpu or nvme (comma-separated)");
  }
  return out;
}

std::string self_path() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, size_t(n)) : std::string("zerotrain");
}

std::string mib_text(double b) {
  char s[32];
  std::snprintf(s, sizeof s, "%.1f", b / (1024.0 * 1024.0));
  return s;
}

// The "auto"-resolving flags among the trials' extra flags (--lr, --warmup-steps ...), so that the
// plan resolves the config as each trial will; the batch flags are the tuner's to set.
void read_auto_flags(TuneArgs& a, Diagnostics& d) {
  CLI::App flags;
  add_auto_flags(flags, a.flags);
  flags.allow_extras();
  std::vector<std::string> args(a.extra.rbegin(), a.extra.rend());
  try {
    flags.parse(args);
  } catch (const CLI::ParseError& e) {
    d.error("-- (trial flags)", shell_join(a.extra), e.what(), "pass flags zerotrain's training command takes");
  }
  auto given = [&](const std::string& flag) {
    for (const auto& w : a.extra)
      if (w == flag || w.rfind(flag + "=", 0) == 0) return true;
    return false;
  };
  for (const char* own : {"--micro-batch", "--grad-accum", "--steps", "--config", "--metrics", "--eval-every", "--eval-batches"})
    if (given(own))
      d.error("-- (trial flags)", own, "the tuner sets this for every trial", "drop it (--steps before -- sets the trial length)");
  for (const char* own : {"--model", "--backend", "--ranks-per-node"})
    if (given(own))
      d.error("-- (trial flags)", own, "the plan must know it: it is a flag of tune itself", std::string("pass ") + own + " before --");
  // Flags that change the model or the memory a trial holds, which the plan could not see.
  for (const char* shape : {"--layers", "--heads", "--dim", "--vocab", "--seq-len", "--untied-embeddings", "--recompute",
                            "--init-from", "--load", "--save", "--data", "--data-train", "--data-val"})
    if (given(shape))
      d.error("-- (trial flags)", shape, "changes the model, its data or the memory a trial holds, which the plan would not see",
              "tune a --model preset as it is (activation checkpointing: the config's activation_checkpointing block)");
  a.flags.steps = a.steps;
}

int run_tune(TuneArgs& a) {
  Diagnostics d;
  read_auto_flags(a, d);
  const nlohmann::json base = read_base(a.config, d);
  if (d.has_errors()) throw UserError(d);
  AutotuningOptions o = read_autotuning_options(base.value("autotuning", nlohmann::json()), a.config, d);
  if (a.max_train_batch_size) o.max_train_batch_size = a.max_train_batch_size;
  if (!a.out.empty()) o.results_dir = a.out, o.exps_dir = a.out + "/exps";

  const ModelSize size = model_size_of(a.model, a.params, d);
  const std::optional<ModelConfig>& model = size.model;
  const int64_t params = size.params;
  if (a.model.empty() && a.params.empty())
    d.error("--model", "", "the tuner needs the model", "pass --model NAME (trials run it), or --params N to plan only");
  if (a.world_size < 1) d.error("--world-size", std::to_string(a.world_size), "must be at least 1", "pass the ranks of the job");
  if (a.steps < o.start_profile_step)
    d.error("--steps", std::to_string(a.steps), "ends before autotuning.start_profile_step " + std::to_string(o.start_profile_step),
            "pass --steps " + std::to_string(std::max(12, o.end_profile_step)) + " or lower start_profile_step");
  if (a.repeats < 1) d.error("--repeats", std::to_string(a.repeats), "must be at least 1", "pass --repeats 2");
  if (!(a.trial_timeout > 0) || !std::isfinite(a.trial_timeout))
    d.error("--trial-timeout", std::to_string(a.trial_timeout), "must be a positive number of seconds", "pass --trial-timeout 300");
  if (a.ranks_per_node < 0)
    d.error("--ranks-per-node", std::to_string(a.ranks_per_node), "must be at least 1", "pass the ranks that share a node");
  for (const auto& [flag, value] : {std::pair<const char*, std::string>{"--gpu-memory", a.gpu_memory}, {"--host-ram", a.host_ram}}) {
    uint64_t bytes = 0;
    if (!value.empty() && !parse_bytes(value, bytes))
      d.error(flag, value, "not a size", "write it like 80G, 512G or 24GiB");
  }
  std::string stage_why;
  std::vector<int> stages = stages_of(a, base, d, stage_why);
  std::vector<OffloadDevice> offloads = offloads_of(a, base, d);
  std::sort(stages.begin(), stages.end());
  stages.erase(std::unique(stages.begin(), stages.end()), stages.end());
  std::sort(offloads.begin(), offloads.end());
  offloads.erase(std::unique(offloads.begin(), offloads.end()), offloads.end());

  BatchPolicy batch;
  batch.world_size = a.world_size;
  batch.min_micro = o.min_train_micro_batch_size_per_gpu;
  batch.max_micro = o.max_train_micro_batch_size_per_gpu;
  batch.min_global = o.min_train_batch_size;
  if (a.keep_global_batch) {
    const auto tb = base.find("train_batch_size");
    if (tb == base.end() || !tb->is_number_integer() || tb->get<int64_t>() < 1)
      d.error("train_batch_size", tb == base.end() ? "" : show_value(*tb), "--keep-global-batch needs the batch it keeps",
              "write train_batch_size as a number in " + a.config);
    else if (tb->get<int64_t>() % a.world_size != 0)
      d.error("train_batch_size", show_value(*tb), "is not divisible by --world-size " + std::to_string(a.world_size),
              "choose a batch that divides over the ranks");
    else batch.mode = BatchPolicy::Mode::KeepGlobal, batch.global_batch = tb->get<int64_t>();
  } else if (o.max_train_batch_size) {
    batch.mode = BatchPolicy::Mode::MaxGlobal;
    batch.global_batch = *o.max_train_batch_size;
    if (*o.max_train_batch_size < a.world_size)
      d.error("max_train_batch_size", std::to_string(*o.max_train_batch_size), "is below the world size",
              "raise it to at least " + std::to_string(a.world_size));
  } else {
    const auto g = base.find("gradient_accumulation_steps");
    batch.gas = g != base.end() && g->is_number_integer() && g->get<int64_t>() >= 1 ? g->get<int64_t>() : 1;
  }
  std::string backend_why = "--backend " + a.backend;
  const ComputeBackend backend = backend_of(a.backend, backend_why);
  if (d.has_errors()) throw UserError(d);

  TuneSetup setup;
  setup.options = o;
  setup.batch = batch;
  setup.params = params;
  setup.repeats = a.repeats;
  std::vector<DroppedCell> invalid;
  for (int s : stages)
    for (OffloadDevice off : offloads) {
      if (stage_traits(s).all_reduces_grads() && off != OffloadDevice::None) {
        invalid.push_back({TuneCell{s, off}, "optimizer offload needs ZeRO stage 1 or more"});
        continue;
      }
      setup.cells.push_back(TuneCell{s, off});
    }
  ConfigPlanner planner(a, base, model, params, backend);
  // A base config every cell refuses is the config's mistake: report it as check would.
  {
    Diagnostics first;
    bool any_valid = setup.cells.empty();
    for (const TuneCell& c : setup.cells) {
      const LoadResult r = planner.load(TrialSpec{c, batch.min_micro, batch.gas_for(batch.min_micro).value_or(1), {}}, a.config);
      if (r.valid()) any_valid = true;
      else if (first.all().empty()) first = r.diagnostics;
    }
    if (!any_valid) throw UserError(first);
  }
  write_all(stderr, format_report(d));  // the autotuning block's warnings

  std::printf("zerotrain tune: %s, %s, world size %d, backend %s (%s); stages %s (%s); metric %s; %s mode; "
              "tuner %s, early stopping %d, at most %d trials\n",
              a.config.c_str(), model ? ("--model " + a.model).c_str() : ("--params " + a.params).c_str(), a.world_size,
              compute_backend_name(backend), backend_why.c_str(), a.stages.empty() ? "from the config" : a.stages.c_str(),
              stage_why.c_str(), tune_metric_name(o.metric), o.fast ? "fast" : "full", tuner_type_name(o.tuner_type),
              o.tuner_early_stopping, o.tuner_num_trials);
  std::fflush(stdout);

  const bool plan_only = a.plan_only || !model;
  if (plan_only) {
    std::printf("%s\n", !model ? "planning only (--params: no model to run trials with; without the model's shapes the "
                                  "plan has no activations, so the micro batch is bounded by the batch limits alone)"
                                : "planning only (--plan-only)");
    for (const DroppedCell& c : invalid) std::printf("  %s: dropped: %s\n", c.cell.name().c_str(), c.reason.c_str());
    NullRunner none;
    Tuner tuner(setup, planner, none);
    TuneResult plan;
    const std::vector<Tuner::Candidate> trials = tuner.plan_cells(plan);
    for (const DroppedCell& c : plan.dropped) std::printf("  %s: dropped: %s\n", c.cell.name().c_str(), c.reason.c_str());
    for (const auto& [cell, mx] : plan.max_micro) {
      std::printf("  %s: largest micro batch in 90%% of the memory: %lld; trials:", cell.name().c_str(), (long long)mx);
      for (const auto& t : trials)
        if (t.spec.cell.name() == cell.name())
          std::printf(" %s (%s MiB)", t.spec.name().c_str(), mib_text(t.plan.peak_bytes).c_str());
      std::printf("\n");
    }
    return 0;
  }

  // Before any trial: the launcher runs and the result folders can be written.
  Diagnostics pre;
  const std::vector<std::string> launcher = split(a.launcher, ' ');
  if (launcher.empty() && a.world_size > 1)
    pre.error("--launcher", a.launcher, "no launcher for a world of " + std::to_string(a.world_size) + " ranks",
              "pass --launcher mpirun (or the launcher your cluster uses)");
  else if (!launcher.empty() && !on_path(launcher[0]))
    pre.error("--launcher", launcher[0], "not found on PATH or not executable", "install it, or pass the launcher's full path");
  for (const std::string& dir : {o.results_dir, o.exps_dir})
    if (!writable_dir(dir))
      pre.error(dir == o.results_dir ? "results_dir" : "exps_dir", dir, "cannot be created or written",
                "pass --out with a writable folder");
  if (pre.has_errors()) throw UserError(pre);

  TrialLaunch launch;
  launch.launcher = launcher;
  launch.zerotrain = self_path();
  launch.train_flags = {"--model", a.model};
  if (a.backend != "auto") launch.train_flags.insert(launch.train_flags.end(), {"--backend", a.backend});
  if (a.ranks_per_node > 0)
    launch.train_flags.insert(launch.train_flags.end(), {"--ranks-per-node", std::to_string(a.ranks_per_node)});
  launch.train_flags.insert(launch.train_flags.end(), a.extra.begin(), a.extra.end());
  launch.world_size = a.world_size;
  launch.steps = a.steps;
  launch.start_profile_step = o.start_profile_step;
  launch.timeout_s = a.trial_timeout;
  launch.exps_dir = o.exps_dir;
  launch.overwrite = o.overwrite;
  launch.base_config = base;
  launch.version = std::string(ZT_VERSION) + " " + ZT_GIT_COMMIT;
  launch.stop = &g_stop_signal;
  const StopSignals signals;  // SIGINT/SIGTERM end the running trial, then the tune
  ProcessTrialRunner runner(launch);
  Tuner tuner(setup, planner, runner, [](const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  });
  TuneResult result;
  try {
    result = tuner.run();
  } catch (const TuneInterrupted& e) {
    std::fprintf(stderr, "zerotrain tune: stopped by signal %d; the running trial was ended. The finished trials' results "
                         "are under %s: run again with \"overwrite\": false to reuse them\n", e.signal, o.exps_dir.c_str());
    return 128 + e.signal;
  }
  result.dropped.insert(result.dropped.begin(), invalid.begin(), invalid.end());
  for (const DroppedCell& c : result.dropped) std::printf("tune: %s dropped before any trial: %s\n", c.cell.name().c_str(), c.reason.c_str());
  const std::string optimal = o.results_dir + "/ds_config_optimal.json";
  TuneReportInput in{result, o.metric, a.world_size, base, shell_join(trial_command(launch, optimal))};
  const std::vector<std::string> written = write_tune_report(o.results_dir, in);
  std::printf("\n%s\nstopped: %s\n", tune_table(in).c_str(), result.stopped_because.c_str());
  if (result.rows.empty()) {
    std::fprintf(stderr, "zerotrain tune: every cell was dropped by the memory plan (reasons above): nothing fits the "
                         "target; try a higher stage, offload, or a smaller micro batch range\n");
    return kNothingFitsExit;
  }
  if (!result.best) {
    std::fprintf(stderr, "zerotrain tune: no trial finished ok, so there is no optimal configuration; the trials' "
                         "logs are under %s\n", o.exps_dir.c_str());
    return 1;
  }
  const TrialRow& best = result.rows[*result.best];
  std::printf("tune: picked %s: %.1f tokens/s (median of %zu), %.1f ms/step; %zu files written to %s, "
              "ds_config_optimal.json and cmd_optimal.txt among them\n",
              best.spec.name().c_str(), best.median_tokens_per_s(), best.runs.size(), best.median_step_ms(), written.size(),
              o.results_dir.c_str());
  return 0;
}

}  // namespace

void register_tune_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<TuneArgs>();
  CLI::App* cmd = app.add_subcommand(
      "tune", "search ZeRO stage, offload, micro batch (and, outside fast mode, the stage's knobs) by measured tokens/s, "
              "never running a trial the memory plan rejects; reads DeepSpeed's autotuning block");
  cmd->add_option("--config", a->config, "the base ds_config.json (its autotuning block, if any, is read)")->required();
  auto* model = cmd->add_option("--model", a->model, "model preset the trials train (tiny, small, gpt2-124m, ...)");
  auto* params = cmd->add_option("--params", a->params, "plan only, for a model of this size (7B, 124M, ...)");
  params->excludes(model);
  cmd->add_option_function<int64_t>("--hidden-size", [a](const int64_t& h) { a->hidden_size = h; },
                                    "with --params: the hidden size for the bucket \"auto\"s");
  cmd->add_option("--world-size", a->world_size, "data-parallel ranks of each trial")->required();
  cmd->add_option("--backend", a->backend, "auto, cpu or cuda (plans for it; trials get --backend unless auto)")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--gpu-memory", a->gpu_memory, "plan for GPUs of this size (e.g. 80G) instead of this machine's");
  cmd->add_option("--host-ram", a->host_ram, "plan for this much host RAM per node instead of this machine's");
  cmd->add_option("--ranks-per-node", a->ranks_per_node, "ranks sharing a node's RAM (also passed to the trials)");
  cmd->add_option("--stages", a->stages, "ZeRO stages to tune, e.g. 0,1,2,3 or all (default: the config's zero_optimization.stage)");
  cmd->add_option("--offload", a->offload, "optimizer offload to tune: none,cpu,nvme (default: the config's)");
  auto* keep = cmd->add_flag("--keep-global-batch", a->keep_global_batch,
                             "keep the config's train_batch_size: micro batches that divide it, accumulation to match");
  cmd->add_option_function<int64_t>("--max-train-batch-size", [a](const int64_t& b) { a->max_train_batch_size = b; },
                                    "DeepSpeed's max_train_batch_size: accumulation = (B / W) / micro batch")
      ->excludes(keep);
  cmd->add_option("--steps", a->steps, "steps per trial (tokens/s from autotuning.start_profile_step on)")->capture_default_str();
  cmd->add_option("--repeats", a->repeats, "runs of each of the best three (picked by median)")->capture_default_str();
  cmd->add_option("--trial-timeout", a->trial_timeout, "seconds before a trial is stopped (status timeout)")->capture_default_str();
  cmd->add_option("--out", a->out, "results folder (sets results_dir; trials go to OUT/exps)");
  cmd->add_option("--launcher", a->launcher,
                  "the launcher's words: {np} becomes the world size, else mpirun and mpiexec get -np W appended and "
                  "another launcher places the ranks itself (e.g. \"mpirun --oversubscribe\", \"scripts/cluster.sh "
                  "run -n 2 --\")")
      ->capture_default_str();
  cmd->add_flag("--plan-only", a->plan_only, "plan the cells and list the trials without running any");
  cmd->add_option("extra", a->extra, "after --: flags passed to every trial's zerotrain run");
  cmd->callback([a, &exit_code] {
    // Tune launches each trial as a job of its own: under a launcher it would nest them.
    if (Bootstrap::launcher_world_size() > 1) {
      if (Bootstrap::launcher_rank() == 0) {
        Diagnostics d;
        d.error("zerotrain tune", "under a launcher with " + std::to_string(Bootstrap::launcher_world_size()) + " ranks",
                "tune launches every trial as a job of its own (--world-size ranks under --launcher)",
                "run `zerotrain tune ...` without mpirun");
        write_all(stderr, format_report(d) + "zerotrain tune: 1 error(s); stopped before doing anything.\n");
      }
      exit_code = kUserErrorExit;
      return;
    }
    exit_code = run_tune(*a);
  });
}

}  // namespace zt
