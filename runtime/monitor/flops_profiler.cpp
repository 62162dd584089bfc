// FlopsProfiler: a profiled step's op records grouped by unit and pass, and DeepSpeed's summary /
// aggregated / detailed print.
#include "runtime/monitor/flops_profiler.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

namespace zt {

// ---------------------------------------------------------------------------------------------
// Attribution: each record carries the scope it ran in.

namespace {

// Within one opening of a scope the ops are listed in issue order; the same op at the same
// position of a later micro-step's scope adds a call to it.
void add_to(std::vector<ProfiledOp>& list, size_t index, const OpRecord& r, bool recompute) {
  const OpCost& c = r.cost;
  if (index < list.size() && list[index].kind == c.kind) {
    list[index].calls += 1;
    list[index].flops += c.flops;
    list[index].seconds += r.seconds;
    return;
  }
  list.push_back({c.kind, c.shape, 1, c.params, c.flops, r.seconds, recompute});
}

void add_by_kind(std::vector<ProfiledOp>& list, const OpRecord& r) {
  for (auto& o : list)
    if (o.kind == r.cost.kind) {
      o.calls += 1;
      o.flops += r.cost.flops;
      o.seconds += r.seconds;
      return;
    }
  list.push_back({r.cost.kind, "", 1, 0, r.cost.flops, r.seconds, false});
}

// Empty when every unit's forward and backward scope was opened once per micro-step; else which was not.
std::string missing_scopes(const OpRecorder& recorded, const std::vector<UnitLayout>& units, int grad_accum) {
  std::vector<int> opened(2 * units.size(), 0);
  for (const OpScopeOpening& s : recorded.scopes())
    if (s.unit >= 0 && size_t(s.unit) < units.size()) ++opened[2 * size_t(s.unit) + (s.pass == OpPass::Backward)];
  for (size_t i = 0; i < opened.size(); ++i)
    if (opened[i] != grad_accum)
      return "unit " + units[i / 2].name + "'s " + (i % 2 ? "backward" : "forward") + " scope was opened " +
             std::to_string(opened[i]) + " time(s) in the step, not once per micro-step (" +
             std::to_string(grad_accum) + "): per-op totals only";
  return "";
}

}  // namespace

FlopsProfile attribute_ops(const OpRecorder& recorded, const std::vector<UnitLayout>& units, int grad_accum) {
  FlopsProfile p;
  const std::vector<OpRecord>& records = recorded.records();
  for (const auto& r : records) add_by_kind(p.by_kind, r);
  p.note = missing_scopes(recorded, units, grad_accum);
  if (!p.note.empty()) {
    for (const auto& r : records) (op_is_backward(r.cost.kind) ? p.backward_flops : p.forward_flops) += r.cost.flops;
    for (const auto& r : records) (op_is_backward(r.cost.kind) ? p.backward_s : p.forward_s) += r.seconds;
    return p;
  }
  p.attributed = true;
  p.units.resize(units.size());
  for (size_t u = 0; u < units.size(); ++u) {
    p.units[u].name = units[u].name;
    p.units[u].params = units[u].numel;
  }
  std::map<int64_t, size_t> position;  // scope opening -> its ops seen so far
  for (const OpRecord& r : records) {
    if (r.unit < 0) {
      add_by_kind(p.outside, r);
      p.outside_s += r.seconds;
      continue;
    }
    UnitProfile& up = p.units[size_t(r.unit)];
    const bool backward = r.pass == OpPass::Backward;
    const bool recompute = backward && op_computes(r.cost.kind) && !op_is_backward(r.cost.kind);
    add_to(backward ? up.backward : up.forward, position[r.scope]++, r, recompute);
    if (!backward) {
      up.forward_flops += r.cost.flops;
      up.forward_s += r.seconds;
    } else {
      (recompute ? up.recompute_flops : up.backward_flops) += r.cost.flops;
      up.backward_s += r.seconds;
    }
    const OpKind k = r.cost.kind;
    const bool gemm_or_attention = k == OpKind::MatmulForward || k == OpKind::MatmulBackward ||
                                   k == OpKind::AttentionForward || k == OpKind::AttentionBackward;
    if (gemm_or_attention && !recompute) p.gemm_attention_flops += r.cost.flops;
  }
  // The embedding op's parameters are its unit's (its arguments do not say the vocabulary).
  for (auto& up : p.units)
    for (auto* list : {&up.forward, &up.backward})
      for (auto& o : *list)
        if (o.kind == OpKind::EmbeddingForward || o.kind == OpKind::EmbeddingBackward) o.params = up.params;
  for (const auto& up : p.units) {
    p.forward_flops += up.forward_flops;
    p.backward_flops += up.backward_flops;
    p.recompute_flops += up.recompute_flops;
    p.forward_s += up.forward_s;
    p.backward_s += up.backward_s;
  }
  return p;
}

// ---------------------------------------------------------------------------------------------
// The profiler.

void FlopsProfiler::check(const FlopsProfilerConfig& c, int64_t steps, Diagnostics& d) {
  if (!c.enabled.value) return;
  const int64_t k = c.profile_step.value;
  if (k < 0)
    d.error("flops_profiler.profile_step", std::to_string(k), "must be at least 0 (the completed steps before the profiled one)",
            "use 1 (DeepSpeed's default: profile the second step, after one warm-up step)");
  else if (k + 1 > steps)
    d.error("flops_profiler.profile_step", std::to_string(k),
            "the run has " + std::to_string(steps) + " step(s), so the profile would never be taken (DeepSpeed profiles "
            "the step after profile_step completed steps)",
            "set profile_step to at most " + std::to_string(steps - 1) + ", or run more steps");
  if (c.module_depth.value < -1)
    d.error("flops_profiler.module_depth", std::to_string(c.module_depth.value), "must be -1 (every depth) or at least 0",
            "use -1, 0 (the model), 1 (+ units) or 2 (+ ops)");
  if (c.top_modules.value < 1)
    d.error("flops_profiler.top_modules", std::to_string(c.top_modules.value), "must be at least 1", "use e.g. 3");
  const std::string& f = c.output_file.value;
  if (!f.empty()) {
    const std::filesystem::path parent = std::filesystem::path(f).parent_path();
    const std::string dir = parent.empty() ? "." : parent.string();
    if (!std::filesystem::is_directory(dir))
      d.error("flops_profiler.output_file", "\"" + f + "\"", "its folder " + dir + " does not exist", "mkdir -p " + dir);
    else if (access(dir.c_str(), W_OK) != 0)
      d.error("flops_profiler.output_file", "\"" + f + "\"", "its folder " + dir + " is not writable by this user",
              "give a path in a writable folder");
  }
}

Gpt2Flops analytic_training_flops(const ModelConfig& m, int64_t sequences) {
  if (m.llama())
    return llama_training_flops(m.layers, m.dim, m.vocab, m.seq_len, m.heads, m.kv_head_count(), m.head_width(),
                                m.intermediate, sequences, false);
  return gpt2_training_flops(m.layers, m.dim, m.vocab, m.seq_len, sequences, false);
}

FlopsProfiler::FlopsProfiler(const FlopsProfilerConfig& c, const ModelConfig& m, int micro_batch, int grad_accum,
                             int world_size, DevicePeak peak)
    : model_(m), layouts_(build_unit_layouts(m)), peak_(std::move(peak)), profile_step_(c.profile_step.value),
      module_depth_(int(c.module_depth.value)), top_modules_(int(c.top_modules.value)), detailed_(c.detailed.value),
      output_file_(c.output_file.value), micro_batch_(micro_batch), grad_accum_(grad_accum), world_(world_size) {
  model_flops_ = analytic_training_flops(m, int64_t(micro_batch) * grad_accum).model();
}

OpRecorder* FlopsProfiler::before_step(int64_t step) {
  if (step != step_to_profile()) return nullptr;
  recorder_.clear();
  recording_ = true;
  return &recorder_;
}

std::optional<FlopsProfile> FlopsProfiler::after_step(int64_t step, double step_seconds) {
  if (step != step_to_profile() || !recording_) return std::nullopt;
  recording_ = false;
  FlopsProfile p = attribute_ops(recorder_, layouts_, grad_accum_);
  p.step = step;
  p.profile_step = profile_step_;
  p.world_size = world_;
  p.micro_batch = micro_batch_;
  p.grad_accum = grad_accum_;
  p.seq_len = model_.seq_len;
  p.params = model_.total_params();
  p.step_s = step_seconds;
  p.peak = peak_;
  p.analytic_flops = analytic_training_flops(model_, int64_t(micro_batch_) * grad_accum_).model();
  if (p.attributed) model_flops_ = p.model_flops();
  return p;
}

// ---------------------------------------------------------------------------------------------
// Printing.

namespace {

std::string scaled(double v, const char* unit, int precision = 2) {
  static const char* prefixes[] = {"", "K", "M", "G", "T", "P"};
  int i = 0;
  while (std::fabs(v) >= 1000.0 && i < 5) v /= 1000.0, ++i;
  char b[64];
  if (i == 0 && !*unit)  // a plain count below 1000: no decimals, no unit
    std::snprintf(b, sizeof b, "%.0f", v);
  else
    std::snprintf(b, sizeof b, "%.*f %s%s", precision, v, prefixes[i], unit);
  std::string s = b;
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}
std::string ms(double s) {
  char b[48];
  std::snprintf(b, sizeof b, s < 1e-3 ? "%.1f us" : "%.2f ms", s < 1e-3 ? s * 1e6 : s * 1e3);
  return b;
}
std::string pct(double part, double whole) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f%%", whole > 0 ? 100.0 * part / whole : 0.0);
  return b;
}
std::string rate(double flops, double s) { return s > 0 ? scaled(flops / s, "FLOP/s") : "-"; }
std::string line(const std::string& label, const std::string& value) {
  std::string s = label;
  if (s.size() < 66) s.append(66 - s.size(), ' ');
  return s + value + "\n";
}

struct Module {
  std::string name;
  int64_t params;
  double flops, seconds;
};

std::string top_of(std::vector<Module> mods, int k, int which) {
  std::sort(mods.begin(), mods.end(), [&](const Module& a, const Module& b) {
    return which == 0 ? a.params > b.params : which == 1 ? a.flops > b.flops : a.seconds > b.seconds;
  });
  std::string s = "{";
  for (size_t i = 0; i < mods.size() && int(i) < k; ++i) {
    const auto& m = mods[i];
    s += (i ? ", '" : "'") + m.name + "': '" +
         (which == 0 ? scaled(double(m.params), "") : which == 1 ? scaled(m.flops, "FLOPs") : ms(m.seconds)) + "'";
  }
  return s + "}";
}

}  // namespace

std::string FlopsProfiler::render(const FlopsProfile& p) const {
  std::string s = "\n-------------------------- zerotrain flops profiler --------------------------\n";
  s += "Profile summary at step " + std::to_string(p.step) + " (flops_profiler.profile_step " +
       std::to_string(p.profile_step) + ": after " + std::to_string(p.profile_step) +
       " completed step(s), as DeepSpeed counts)\n";
  s += "Notations: params (parameters), FLOPs (floating-point operations), FLOP/s (FLOPs per second);\n"
       "fwd / bwd latency: the sum of the ops' times, each op timed between two device synchronisations;\n"
       "step latency: the profiled step's wall time (the per-op synchronisation included)\n\n";
  const double tokens = double(p.micro_batch) * p.grad_accum * p.seq_len;
  s += line("world size (= data parallel size):", std::to_string(p.world_size));
  s += line("micro batch per rank x accumulation x seq len:", std::to_string(p.micro_batch) + " x " +
                                                                  std::to_string(p.grad_accum) + " x " +
                                                                  std::to_string(p.seq_len));
  s += line("params of the model:", scaled(double(p.params), ""));
  s += line("fwd FLOPs per rank:", scaled(p.forward_flops, "FLOPs"));
  s += line("bwd FLOPs per rank:", scaled(p.backward_flops, "FLOPs"));
  if (p.recompute_flops > 0) s += line("recomputed fwd FLOPs per rank (not model FLOPs):", scaled(p.recompute_flops, "FLOPs"));
  s += line("fwd latency:", ms(p.forward_s));
  s += line("fwd FLOP/s per rank = fwd FLOPs / fwd latency:", rate(p.forward_flops, p.forward_s));
  s += line("bwd latency:", ms(p.backward_s));
  s += line("bwd FLOP/s per rank = bwd FLOPs / bwd latency:", rate(p.backward_flops + p.recompute_flops, p.backward_s));
  s += line("fwd+bwd FLOP/s per rank = hardware FLOPs / (fwd+bwd latency):",
            rate(p.hardware_flops(), p.forward_s + p.backward_s));
  s += line("outside units (engine: zeroing, accumulation, optimizer):", ms(p.outside_s));
  s += line("step latency:", ms(p.step_s));
  s += line("FLOP/s per rank = model FLOPs / step latency:", rate(p.model_flops(), p.step_s));
  s += line("peak FLOP/s:", scaled(p.peak.flops_per_s, "FLOP/s") + " (" + p.peak.source + ")");
  char mfu[64];
  std::snprintf(mfu, sizeof mfu, "%.2f%%", 100.0 * p.mfu());
  s += line("MFU = model FLOPs / step latency / peak:", mfu);
  s += line("analytic 6*Psi_w + 2*Psi_b per token + causal attention:",
            scaled(p.analytic_flops, "FLOPs") +
                (p.attributed ? " (counted in the GEMM and attention ops: " + scaled(p.gemm_attention_flops, "FLOPs") +
                                    "; all ops: " + scaled(p.model_flops(), "FLOPs") + ")"
                              : ""));
  s += line("samples/second (this rank):", p.step_s > 0 ? std::to_string(double(p.micro_batch) * p.grad_accum / p.step_s) : "-");
  s += line("tokens/second (this rank):", p.step_s > 0 ? std::to_string(tokens / p.step_s) : "-");
  if (!p.attributed) {
    s += "\n" + p.note + "\n";
    for (const auto& o : p.by_kind)
      s += "    " + std::string(op_kind_name(o.kind)) + ": " + std::to_string(o.calls) + " calls, " +
           scaled(o.flops, "FLOPs") + ", " + ms(o.seconds) + ", " + rate(o.flops, o.seconds) + "\n";
    return s;
  }
  // Aggregated profile: the model, its units, and the ops (by kind) at depths 0, 1, 2.
  const double total_flops = p.hardware_flops(), total_s = p.forward_s + p.backward_s;
  std::vector<std::vector<Module>> depth(3);
  const std::string root = model_.llama() ? "Llama" : "GPT2";
  depth[0].push_back({root, p.params, total_flops, total_s});
  for (const auto& u : p.units) depth[1].push_back({u.name, u.params, u.flops(), u.seconds()});
  std::map<std::string, Module> ops;
  for (const auto& u : p.units)
    for (const auto* list : {&u.forward, &u.backward})
      for (const auto& o : *list) {
        Module& m = ops.try_emplace(op_kind_name(o.kind), Module{op_kind_name(o.kind), 0, 0, 0}).first->second;
        m.params += o.params;
        m.flops += o.flops;
        m.seconds += o.seconds;
      }
  for (const auto& [k, m] : ops) depth[2].push_back(m);
  const int max_depth = module_depth_ < 0 ? 2 : std::min(module_depth_, 2);
  s += "\n----------------------------- Aggregated profile per rank -----------------------------\n";
  s += "Top " + std::to_string(top_modules_) + " modules in terms of params, FLOPs or latency at different model depths:\n";
  for (int d = 0; d <= max_depth; ++d) {
    s += "depth " + std::to_string(d) + (d == 1 ? " (units)" : d == 2 ? " (ops, by kind)" : "") + ":\n";
    s += "    params      - " + top_of(depth[size_t(d)], top_modules_, 0) + "\n";
    s += "    FLOPs       - " + top_of(depth[size_t(d)], top_modules_, 1) + "\n";
    s += "    latency     - " + top_of(depth[size_t(d)], top_modules_, 2) + "\n";
  }
  if (!detailed_) return s;
  s += "\n------------------------------ Detailed profile per rank ------------------------------\n";
  s += "Each module profile is listed after its name in the following order:\n"
       "params, percentage of total params, FLOPs (fwd+bwd), percentage of total FLOPs, latency (fwd+bwd),\n"
       "percentage of total latency, FLOP/s; ops give calls, FLOPs, latency and FLOP/s\n\n";
  const auto module_line = [&](const std::string& indent, const std::string& name, int64_t params, double flops,
                               double secs) {
    return indent + name + " (" + scaled(double(params), "") + ", " + pct(double(params), double(p.params)) + " Params, " +
           scaled(flops, "FLOPs") + ", " + pct(flops, total_flops) + " FLOPs, " + ms(secs) + ", " + pct(secs, total_s) +
           " latency, " + rate(flops, secs) + ")\n";
  };
  s += module_line("", root, p.params, total_flops, total_s);
  if (max_depth >= 1)
    for (const auto& u : p.units) {
      s += module_line("  ", "(" + u.name + ")", u.params, u.flops(), u.seconds());
      if (max_depth < 2) continue;
      for (const auto* list : {&u.forward, &u.backward})
        for (const auto& o : *list)
          s += std::string("      ") + (list == &u.forward ? "fwd " : o.recompute ? "bwd (recompute) " : "bwd ") +
               op_kind_name(o.kind) + " [" + o.shape + "]: " + std::to_string(o.calls) + " call(s), " +
               (o.params ? scaled(double(o.params), "") + " params, " : "") + scaled(o.flops, "FLOPs") + ", " +
               ms(o.seconds) + ", " + rate(o.flops, o.seconds) + "\n";
    }
  if (!p.outside.empty()) {
    s += "  (outside units: the engine's own ops)\n";
    for (const auto& o : p.outside)
      s += "      " + std::string(op_kind_name(o.kind)) + ": " + std::to_string(o.calls) + " call(s), " +
           scaled(o.flops, "FLOPs") + ", " + ms(o.seconds) + "\n";
  }
  return s;
}

nlohmann::json FlopsProfiler::to_json(const FlopsProfile& p) const {
  const auto ops_json = [](const std::vector<ProfiledOp>& list) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& o : list)
      a.push_back({{"op", op_kind_name(o.kind)}, {"shape", o.shape}, {"calls", o.calls}, {"params", o.params},
                   {"flops", o.flops}, {"seconds", o.seconds}, {"recompute", o.recompute}});
    return a;
  };
  nlohmann::json units = nlohmann::json::array();
  for (const auto& u : p.units)
    units.push_back({{"name", u.name}, {"params", u.params}, {"forward_flops", u.forward_flops},
                     {"backward_flops", u.backward_flops}, {"recompute_flops", u.recompute_flops},
                     {"forward_s", u.forward_s}, {"backward_s", u.backward_s}, {"forward", ops_json(u.forward)},
                     {"backward", ops_json(u.backward)}});
  return {{"step", p.step},
          {"profile_step", p.profile_step},
          {"attributed", p.attributed},
          {"note", p.note},
          {"params", p.params},
          {"forward_flops", p.forward_flops},
          {"backward_flops", p.backward_flops},
          {"recompute_flops", p.recompute_flops},
          {"model_flops", p.model_flops()},
          {"gemm_attention_flops", p.gemm_attention_flops},
          {"analytic_flops", p.analytic_flops},
          {"forward_s", p.forward_s},
          {"backward_s", p.backward_s},
          {"outside_s", p.outside_s},
          {"step_s", p.step_s},
          {"peak_flops_per_s", p.peak.flops_per_s},
          {"peak_source", p.peak.source},
          {"mfu", p.mfu()},
          {"units", units},
          {"outside", ops_json(p.outside)},
          {"by_kind", ops_json(p.by_kind)}};
}

}  // namespace zt
