// "auto" resolution as the HF Trainer does it: each key from its flag, or from the Trainer's default
// for that argument when the flag is not given (the echo and a warning say so); the stage-3 buckets
// from the model's hidden size; a flag against a different number in the file is an error.
#include <cmath>
#include <sstream>

#include "base/stage_traits.h"
#include "runtime/config/config_load.h"
#include "runtime/config/config_walk.h"

namespace zt {
namespace {

std::string num(double v) { return number_text(v); }
std::string num(int64_t v) { return std::to_string(v); }

void took_default(const std::string& path, const std::string& value, const std::string& flag, Diagnostics& d) {
  const bool two = flag.find(" and ") != std::string::npos;
  d.warning(path, value, "\"auto\" took the HF Trainer's default " + value + " because " + flag + (two ? " were" : " was") +
                             " not given",
            "pass " + flag + " to choose the value");
}

// One key that a flag resolves: "auto" takes the flag, else the Trainer's default; a flag also fills
// a key the file leaves out, and must agree with a number the file gives.
template <class T>
void resolve(Field<T>& f, const std::string& path, const std::optional<T>& flag, const std::string& flag_name,
             T trainer_default, Diagnostics& d) {
  if (f.invalid) return;
  if (f.is_auto) {
    f.is_auto = false;
    if (flag) {
      f.value = *flag;
      f.source = {SourceKind::Auto, flag_name};
    } else {
      f.value = trainer_default;
      f.source = {SourceKind::Auto, "the HF Trainer's default (" + flag_name + " not given)"};
      took_default(path, num(trainer_default), flag_name, d);
    }
    return;
  }
  if (!flag) return;
  if (f.present) {
    if (f.value == *flag) return;  // the same value twice is no conflict (the HF Trainer agrees)
    d.error(path, num(f.value),
            "set twice: the config says " + num(f.value) + " and " + flag_name + " says " + num(*flag) +
                " (the HF Trainer refuses such a mismatch too)",
            "write \"" + path.substr(path.rfind('.') + 1) + "\": \"auto\" in the config to take " + flag_name +
                ", or drop " + flag_name);
    f.invalid = true;
    return;
  }
  f.value = *flag;
  f.source = {SourceKind::Flag, flag_name};
}

void resolve_betas(OptimizerConfig& o, const AutoFlags& fl, Diagnostics& d) {
  auto& f = o.betas;
  const std::string path = "optimizer.params.betas";
  if (f.invalid) return;
  const bool any = fl.adam_beta1 || fl.adam_beta2;
  const double b1 = fl.adam_beta1.value_or(TrainerDefaults::adam_beta1);
  const double b2 = fl.adam_beta2.value_or(TrainerDefaults::adam_beta2);
  if (f.is_auto) {
    f.is_auto = false;
    f.value = {b1, b2};
    if (fl.adam_beta1 && fl.adam_beta2) {
      f.source = {SourceKind::Auto, "--adam-beta1/--adam-beta2"};
      return;
    }
    const std::string missing = !fl.adam_beta1 && !fl.adam_beta2 ? "--adam-beta1 and --adam-beta2"
                                : !fl.adam_beta1                 ? "--adam-beta1"
                                                                 : "--adam-beta2";
    f.source = {SourceKind::Auto, "the HF Trainer's default for " + missing + " (not given)"};
    took_default(path, "[" + num(b1) + ", " + num(b2) + "]", missing, d);
    return;
  }
  if (!any) return;
  if (f.present) {
    const bool same = (!fl.adam_beta1 || *fl.adam_beta1 == f.value[0]) && (!fl.adam_beta2 || *fl.adam_beta2 == f.value[1]);
    if (same) return;
    const std::string cfg = "[" + num(f.value[0]) + ", " + num(f.value[1]) + "]";
    std::string flags;
    if (fl.adam_beta1) flags += "--adam-beta1 " + num(*fl.adam_beta1);
    if (fl.adam_beta2) flags += std::string(flags.empty() ? "" : " and ") + "--adam-beta2 " + num(*fl.adam_beta2);
    d.error(path, cfg, "set twice: the config says " + cfg + " and " + flags + " (the HF Trainer refuses such a mismatch too)",
            "write \"betas\": \"auto\" in the config to take the flags, or drop the flags");
    f.invalid = true;
    return;
  }
  if (fl.adam_beta1) f.value[0] = *fl.adam_beta1;
  if (fl.adam_beta2) f.value[1] = *fl.adam_beta2;
  f.source = {SourceKind::Flag, "--adam-beta1/--adam-beta2"};
}

// fp16.enabled / bf16.enabled: "auto" is the flag's presence (false without it, as in the Trainer).
void resolve_precision(Field<bool>& f, const std::string& path, bool flag, const std::string& flag_name, Diagnostics& d) {
  if (f.invalid) return;
  if (f.is_auto) {
    f.is_auto = false;
    f.value = flag;
    f.source = flag ? Source{SourceKind::Auto, flag_name}
                    : Source{SourceKind::Auto, "false: " + flag_name + " not given (the HF Trainer's default)"};
    return;
  }
  if (!flag) return;
  if (f.present && !f.value) {
    d.error(path, "false", "set twice: the config says false and " + flag_name + " asks for it (the HF Trainer refuses "
                           "such a mismatch too)",
            "write \"enabled\": \"auto\" (or true) in the config, or drop " + flag_name);
    f.invalid = true;
    return;
  }
  if (!f.present) {
    f.value = true;
    f.source = {SourceKind::Flag, flag_name};
  }
}

// zero_optimization bucket sizes: "auto" follows the HF Trainer's rule from the hidden size.
void resolve_from_model(Field<int64_t>& f, const std::string& path, const LoadOptions& opts, int64_t value,
                        const std::string& rule, Diagnostics& d) {
  if (!f.is_auto || f.invalid) return;
  if (!opts.model_hidden) {
    f.invalid = true;
    if (opts.size_without_shape)
      d.error(path, "\"auto\"", "\"auto\" here is computed from the model's hidden size (" + rule +
                                    "); --params gives the parameter count but not the hidden size",
              "pass --hidden-size H (the model's hidden size), or write a number in the config");
    else
      d.error(path, "\"auto\"", "\"auto\" here is computed from the model's hidden size (" + rule + ") and no model was named",
              "pass --model NAME or --hidden-size H (or write a number in the config)");
    return;
  }
  f.value = value;
  f.is_auto = false;
  f.source = {SourceKind::Auto, "hidden size " + std::to_string(*opts.model_hidden) + " (" + rule + ")"};
}

// The HF Trainer fills the prefetch and persistence "auto"s only for stage 3; otherwise DeepSpeed's
// config model drops them and its defaults stay (they have no effect below stage 3 anyway).
void keep_default_below_stage3(Field<int64_t>& f, int64_t stage) {
  if (!f.is_auto || f.invalid || (is_zero_stage(stage) && stage_traits(int(stage)).gathers_params())) return;
  f.is_auto = false;
  f.present = false;
  f.source = {SourceKind::Auto, "DeepSpeed's default: the HF Trainer fills it only at stage 3"};
}

}  // namespace

std::optional<int64_t> Config::schedule_steps() const {
  const std::string& t = scheduler.type.value;
  if (t != "WarmupDecayLR" && t != "WarmupCosineLR") return std::nullopt;
  if (scheduler.total_num_steps.invalid || scheduler.total_num_steps.is_auto) return std::nullopt;
  return scheduler.total_num_steps.value;
}

void resolve_run_length(Config& c, const LoadOptions& opts, Diagnostics& d) {
  const std::optional<int64_t>& flag = opts.flags.steps;
  const std::optional<int64_t> schedule = c.schedule_steps();
  const bool schedule_in_file = schedule && c.scheduler.total_num_steps.from_file();
  auto& r = c.run_steps;
  if (flag) {
    r.value = *flag;
    r.source = {SourceKind::Flag, "--steps"};
    if (schedule_in_file && *flag > *schedule)
      d.error("--steps", num(*flag),
              "past the end of the schedule: scheduler.params.total_num_steps is " + num(*schedule) + " in " + c.file +
                  ", so the lr would stay at its floor for the last " + num(*flag - *schedule) + " steps",
              "pass --steps " + num(*schedule) + " or less, or raise total_num_steps to " + num(*flag));
  } else if (schedule_in_file) {
    r.value = *schedule;
    r.source = {SourceKind::Derived, "the whole schedule: scheduler.params.total_num_steps (--steps not given)"};
  } else {
    r.value = kDefaultRunSteps;
    r.source = {SourceKind::Default, "--steps not given"};
  }
  if (r.value < 1) d.error("--steps", num(r.value), "must be at least 1", "pass --steps 1 or more");
}

void resolve_auto(Config& c, const LoadOptions& opts, Diagnostics& d) {
  const AutoFlags& fl = opts.flags;
  using TD = TrainerDefaults;
  resolve(c.train_micro_batch_size_per_gpu, "train_micro_batch_size_per_gpu", fl.micro_batch, "--micro-batch",
          TD::micro_batch, d);
  resolve(c.gradient_accumulation_steps, "gradient_accumulation_steps", fl.grad_accum, "--grad-accum", TD::grad_accum, d);
  resolve(c.gradient_clipping, "gradient_clipping", fl.max_grad_norm, "--max-grad-norm", TD::max_grad_norm, d);
  resolve_precision(c.fp16.enabled, "fp16.enabled", fl.fp16, "--fp16", d);
  resolve_precision(c.bf16.enabled, c.bf16.spelling + ".enabled", fl.bf16, "--bf16", d);

  auto& o = c.optimizer;
  resolve(o.lr, "optimizer.params.lr", fl.lr, "--lr", TD::lr, d);
  resolve(o.weight_decay, "optimizer.params.weight_decay", fl.weight_decay, "--weight-decay", TD::weight_decay, d);
  if (o.type.value != "SGD") {
    resolve(o.eps, "optimizer.params.eps", fl.adam_eps, "--adam-eps", TD::adam_eps, d);
    resolve_betas(o, fl, d);
  }

  auto& s = c.scheduler;
  const int64_t steps = fl.steps.value_or(kDefaultRunSteps);
  if (s.present && !s.type.value.empty()) {
    // "auto" is the run's length (the HF rule); a number is the schedule, of which --steps says how
    // much this run trains (resolve_run_length).
    auto& total = s.total_num_steps;
    if (s.type.value != "WarmupLR" && total.is_auto && !total.invalid) {
      total.is_auto = false;
      total.value = steps;
      total.source = fl.steps ? Source{SourceKind::Auto, "--steps"}
                              : Source{SourceKind::Auto, "the run's length, " + num(steps) + " steps (--steps not given)"};
    }
    // HF: warmup_steps when > 0, else ceil(num_training_steps * warmup_ratio).
    std::optional<int64_t> warmup;
    std::string warmup_flag = "--warmup-steps";
    if (fl.warmup_steps && *fl.warmup_steps > 0) {
      warmup = fl.warmup_steps;
    } else if (fl.warmup_ratio) {
      const int64_t total = s.type.value == "WarmupLR" ? steps : s.total_num_steps.value;
      warmup = int64_t(std::ceil(double(total) * *fl.warmup_ratio));
      warmup_flag = "--warmup-ratio " + num(*fl.warmup_ratio) + " (ceil(ratio * " + num(total) + " steps))";
    } else if (fl.warmup_steps) {
      warmup = fl.warmup_steps;
    }
    if (s.type.value != "OneCycle")
      resolve(s.warmup_num_steps, "scheduler.params.warmup_num_steps", warmup, warmup_flag, TD::warmup_steps, d);
    if (s.type.value == "WarmupLR" || s.type.value == "WarmupDecayLR") {
      resolve(s.warmup_max_lr, "scheduler.params.warmup_max_lr", fl.lr, "--lr", TD::lr, d);
      if (s.warmup_min_lr.is_auto) {
        s.warmup_min_lr.value = 0.0;
        s.warmup_min_lr.is_auto = false;
        s.warmup_min_lr.source = {SourceKind::Auto, "0 (the HF Trainer's value; no flag)"};
      }
    }
  } else if ((fl.warmup_steps || fl.warmup_ratio) && !s.present) {
    d.warning(fl.warmup_steps ? "--warmup-steps" : "--warmup-ratio",
              fl.warmup_steps ? num(*fl.warmup_steps) : num(*fl.warmup_ratio),
              "the config has no scheduler block, so there is no warmup to set",
              "add a \"scheduler\" block (e.g. WarmupLR with \"warmup_num_steps\": \"auto\") or drop the flag");
  }

  auto& z = c.zero_optimization;
  const int64_t hv = opts.model_hidden.value_or(0);
  const int64_t stage = z.stage.invalid ? 0 : z.stage.value;
  keep_default_below_stage3(z.prefetch_bucket_size, stage);
  keep_default_below_stage3(z.param_persistence_threshold, stage);
  resolve_from_model(z.reduce_bucket_size, "zero_optimization.reduce_bucket_size", opts, hv * hv, "hidden * hidden", d);
  resolve_from_model(z.prefetch_bucket_size, "zero_optimization.stage3_prefetch_bucket_size", opts,
                     static_cast<int64_t>(std::floor(0.9 * double(hv) * double(hv))), "0.9 * hidden * hidden, rounded down", d);
  resolve_from_model(z.param_persistence_threshold, "zero_optimization.stage3_param_persistence_threshold", opts, 10 * hv,
                     "10 * hidden", d);
}

}  // namespace zt
