// "auto" resolution: fill keys that say "auto" from the command-line flags (the HF Trainer
// mapping) or the model's hidden size; refuse unresolved "auto" and flag-vs-number conflicts.
#include <cmath>
#include <sstream>

#include "runtime/config/config_load.h"

namespace zt {
namespace {

std::string num(double v) {
  std::ostringstream o;
  o << v;
  return o.str();
}
std::string num(int64_t v) { return std::to_string(v); }

// One key that a flag resolves. `applies` is false when the key's block is absent from the file
// and the flag has nothing to fill there.
template <class T>
void resolve(Field<T>& f, const std::string& path, const std::optional<T>& flag, const std::string& flag_name,
             Diagnostics& d) {
  if (f.invalid) return;
  if (f.is_auto) {
    if (flag) {
      f.value = *flag;
      f.is_auto = false;
      f.source = {SourceKind::Auto, flag_name};
    } else {
      f.invalid = true;
      d.error(path, "\"auto\"", "\"auto\" has nothing to resolve it: zerotrain fills it from " + flag_name +
                                    " and that flag was not given",
              "pass " + flag_name + " <value>, or write the value in the config");
    }
    return;
  }
  if (!flag) return;
  if (f.present) {
    d.error(path, num(f.value),
            "set twice: the config says " + num(f.value) + " and " + flag_name + " says " + num(*flag) +
                " (one source of truth: a flag may only fill a key the config leaves out or sets to \"auto\")",
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
  if (f.is_auto) {
    if (fl.adam_beta1 && fl.adam_beta2) {
      f.value = {*fl.adam_beta1, *fl.adam_beta2};
      f.is_auto = false;
      f.source = {SourceKind::Auto, "--adam-beta1/--adam-beta2"};
    } else {
      const std::string missing = !fl.adam_beta1 && !fl.adam_beta2 ? "--adam-beta1 and --adam-beta2"
                                  : !fl.adam_beta1                 ? "--adam-beta1"
                                                                   : "--adam-beta2";
      f.invalid = true;
      d.error(path, "\"auto\"", "\"auto\" has nothing to resolve it: zerotrain fills it from --adam-beta1 and --adam-beta2, and " +
                                    missing + (fl.adam_beta1 || fl.adam_beta2 ? " was" : " were") + " not given",
              "pass " + missing + (fl.adam_beta1 || fl.adam_beta2 ? " <value>" : " <values>") +
                  ", or write [beta1, beta2] in the config");
    }
    return;
  }
  if (!any) return;
  if (f.present) {
    const std::string cfg = "[" + num(f.value[0]) + ", " + num(f.value[1]) + "]";
    std::string flags;
    if (fl.adam_beta1) flags += "--adam-beta1 " + num(*fl.adam_beta1);
    if (fl.adam_beta2) flags += std::string(flags.empty() ? "" : " and ") + "--adam-beta2 " + num(*fl.adam_beta2);
    d.error(path, cfg, "set twice: the config says " + cfg + " and " + flags + " (one source of truth)",
            "write \"betas\": \"auto\" in the config to take the flags, or drop the flags");
    f.invalid = true;
    return;
  }
  if (fl.adam_beta1) f.value[0] = *fl.adam_beta1;
  if (fl.adam_beta2) f.value[1] = *fl.adam_beta2;
  f.source = {SourceKind::Flag, "--adam-beta1/--adam-beta2"};
}

// zero_optimization bucket sizes: "auto" follows the HF Trainer's rule from the hidden size.
void resolve_from_model(Field<int64_t>& f, const std::string& path, const std::optional<int64_t>& hidden,
                        int64_t value, const std::string& rule, Diagnostics& d) {
  if (!f.is_auto || f.invalid) return;
  if (!hidden) {
    f.invalid = true;
    d.error(path, "\"auto\"", "\"auto\" here is computed from the model's hidden size (" + rule + ") and no model was named",
            "pass --model NAME (or write a number in the config)");
    return;
  }
  f.value = value;
  f.is_auto = false;
  f.source = {SourceKind::Auto, "--model (" + rule + ")"};
}

}  // namespace

void resolve_auto(Config& c, const LoadOptions& opts, Diagnostics& d) {
  const AutoFlags& fl = opts.flags;
  resolve(c.train_micro_batch_size_per_gpu, "train_micro_batch_size_per_gpu", fl.micro_batch, "--micro-batch", d);
  resolve(c.gradient_accumulation_steps, "gradient_accumulation_steps", fl.grad_accum, "--grad-accum", d);
  resolve(c.gradient_clipping, "gradient_clipping", fl.max_grad_norm, "--max-grad-norm", d);

  auto& o = c.optimizer;
  resolve(o.lr, "optimizer.params.lr", fl.lr, "--lr", d);
  resolve(o.weight_decay, "optimizer.params.weight_decay", fl.weight_decay, "--weight-decay", d);
  if (o.type.value != "SGD") {
    resolve(o.eps, "optimizer.params.eps", fl.adam_eps, "--adam-eps", d);
    resolve_betas(o, fl, d);
  }

  auto& s = c.scheduler;
  if (s.present && !s.type.value.empty()) {
    resolve(s.warmup_num_steps, "scheduler.params.warmup_num_steps", fl.warmup_steps, "--warmup-steps", d);
    if (s.type.value != "WarmupCosineLR") {
      resolve(s.warmup_max_lr, "scheduler.params.warmup_max_lr", fl.lr, "--lr", d);
      if (s.warmup_min_lr.is_auto) {
        s.warmup_min_lr.value = 0.0;
        s.warmup_min_lr.is_auto = false;
        s.warmup_min_lr.source = {SourceKind::Auto, "0 (the HF Trainer's value; no flag)"};
      }
    }
    if (s.type.value != "WarmupLR")
      resolve(s.total_num_steps, "scheduler.params.total_num_steps", fl.steps, "--steps", d);
  } else if (fl.warmup_steps && !s.present) {
    d.warning("--warmup-steps", num(*fl.warmup_steps), "the config has no scheduler block, so there is no warmup to set",
              "add a \"scheduler\" block (e.g. WarmupLR with \"warmup_num_steps\": \"auto\") or drop --warmup-steps");
  }

  auto& z = c.zero_optimization;
  const auto& h = opts.model_hidden;
  const int64_t hv = h ? *h : 0;
  resolve_from_model(z.reduce_bucket_size, "zero_optimization.reduce_bucket_size", h, hv * hv, "hidden * hidden", d);
  resolve_from_model(z.prefetch_bucket_size, "zero_optimization.stage3_prefetch_bucket_size", h,
                     static_cast<int64_t>(0.9 * double(hv) * double(hv)), "0.9 * hidden * hidden", d);
  resolve_from_model(z.param_persistence_threshold, "zero_optimization.stage3_param_persistence_threshold", h, 10 * hv,
                     "10 * hidden", d);
}

}  // namespace zt
