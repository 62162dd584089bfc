// write_tune_report: the trial table as CSV and Markdown, DeepSpeed's summary, the optimal config
// and command.
#include "runtime/tune/tune_report.h"

#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "runtime/common/diagnostics.h"
#include "runtime/tune/tune_plots.h"

namespace zt {

namespace {

std::string fixed(double v, int digits) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}

std::string mib(double bytes) { return fixed(bytes / (1024.0 * 1024.0), 1); }

std::string percent(double share) {
  const double v = std::round(1000.0 * share) / 10.0;
  return fixed(v == 0 ? 0.0 : v, 1);  // no "-0.0"
}

struct Row {
  std::vector<std::string> cells;
};

std::vector<std::string> header() {
  return {"trial", "cell", "stage", "offload", "micro_batch", "gas", "train_batch_size", "knobs", "planned_peak_mib",
          "measured_peak_mib", "plan_error_pct", "plan_flag", "tokens_per_s", "step_ms", "runs", "status", "exit_code",
          "wall_s", "picked"};
}

std::vector<Row> rows_of(const TuneReportInput& in) {
  std::vector<Row> out;
  for (size_t i = 0; i < in.result.rows.size(); ++i) {
    const TrialRow& r = in.result.rows[i];
    const bool ok = r.ok();
    double measured = 0, wall = 0;
    for (const auto& o : r.runs) measured = std::max(measured, o.measured_peak_bytes), wall += o.wall_s;
    const double err = ok && measured > 0 ? (r.plan.peak_bytes - measured) / measured : 0;
    TrialStatus status = TrialStatus::Ok;
    int code = 0;
    for (const auto& o : r.runs)
      if (o.status != TrialStatus::Ok) status = o.status, code = o.exit_code;
    out.push_back({{r.spec.name(), r.spec.cell.name(), std::to_string(r.spec.cell.stage), offload_name(r.spec.cell.offload),
                    std::to_string(r.spec.micro_batch), std::to_string(r.spec.gas),
                    std::to_string(r.spec.micro_batch * r.spec.gas * in.world_size), r.spec.knobs.text(),
                    mib(r.plan.peak_bytes), ok ? mib(measured) : "-", ok ? percent(err) : "-",
                    ok && std::fabs(err) > kPlanErrorFlag ? "outside 10%" : "",
                    ok ? fixed(r.median_tokens_per_s(), 1) : "-", ok ? fixed(r.median_step_ms(), 1) : "-",
                    std::to_string(r.runs.size()), trial_status_name(status), std::to_string(code), fixed(wall, 1),
                    in.result.best && *in.result.best == i ? "yes" : ""}});
  }
  return out;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

void write_file(const std::string& path, const std::string& text, std::vector<std::string>& written) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    f << text;
    f.close();
    if (!f) {
      std::remove(tmp.c_str());
      throw UserError("results_dir", path, "could not be written", "choose a writable --out folder");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw UserError("results_dir", path, "could not be written", "choose a writable --out folder");
  }
  written.push_back(path);
}

}  // namespace

std::string tune_table(const TuneReportInput& in) {
  const auto h = header();
  std::string s = "|";
  for (const auto& c : h) s += " " + c + " |";
  s += "\n|";
  for (size_t i = 0; i < h.size(); ++i) s += "---|";
  s += "\n";
  for (const Row& r : rows_of(in)) {
    s += "|";
    for (const auto& c : r.cells) s += " " + (c.empty() ? std::string(" ") : c) + " |";
    s += "\n";
  }
  return s;
}

std::vector<std::string> write_tune_report(const std::string& dir, const TuneReportInput& in) {
  ::mkdir(dir.c_str(), 0755);
  std::vector<std::string> written;
  const TuneResult& r = in.result;

  std::string csv;
  const auto h = header();
  for (size_t i = 0; i < h.size(); ++i) csv.append(i ? "," : "").append(h[i]);
  csv += "\n";
  for (const Row& row : rows_of(in)) {
    for (size_t i = 0; i < row.cells.size(); ++i) csv.append(i ? "," : "").append(csv_field(row.cells[i]));
    csv += "\n";
  }
  write_file(dir + "/tune.csv", csv, written);

  size_t runs = 0;
  for (const TrialRow& row : r.rows) runs += row.runs.size();
  std::string md = "# zerotrain tune: " + std::to_string(r.rows.size()) + " trials (" + std::to_string(runs) +
                   " runs with the repeats of the best), metric " + tune_metric_name(in.metric) + "\n\n" + tune_table(in);
  md += "\nPlanned peak: the memory plan per rank at 100% (trials were admitted at 90% of the memory); measured: "
        "the run's ledger peak on rank 0. Rows whose plan is more than 10% off are flagged.\n";
  write_file(dir + "/tune.md", md, written);

  // DeepSpeed's summary: one row per tuning space (our cells), then the pick.
  std::ostringstream sum;
  sum << "| tuning_space | num_experiments | best_metric_val | best_exp_name |\n";
  sum << "|---|---|---|---|\n";
  std::map<std::string, std::pair<int, std::optional<size_t>>> spaces;
  for (size_t i = 0; i < r.rows.size(); ++i) {
    auto& s = spaces[r.rows[i].spec.cell.name()];
    ++s.first;
    const bool better = !s.second || (in.metric == TuneMetric::Latency
                                          ? r.rows[i].metric(in.metric) < r.rows[*s.second].metric(in.metric)
                                          : r.rows[i].metric(in.metric) > r.rows[*s.second].metric(in.metric));
    if (r.rows[i].ok() && better) s.second = i;
  }
  for (const auto& [name, s] : spaces)
    sum << "| " << name << " | " << s.first << " | "
        << (s.second ? fixed(r.rows[*s.second].metric(in.metric), 1) : std::string("-")) << " | "
        << (s.second ? r.rows[*s.second].spec.name() : std::string("-")) << " |\n";
  if (r.best)
    sum << "| global | " << r.rows.size() << " | " << fixed(r.rows[*r.best].metric(in.metric), 1) << " | "
        << r.rows[*r.best].spec.name() << " |\n";
  if (r.best) {  // why this one: the best median, or within 5% of it and simpler
    std::optional<size_t> top;
    for (size_t i = 0; i < r.rows.size(); ++i)
      if (r.rows[i].ok() && r.rows[i].runs.size() == r.rows[*r.best].runs.size() &&
          (!top || (in.metric == TuneMetric::Latency ? r.rows[i].metric(in.metric) < r.rows[*top].metric(in.metric)
                                                     : r.rows[i].metric(in.metric) > r.rows[*top].metric(in.metric))))
        top = i;
    sum << "\npicked " << r.rows[*r.best].spec.name() << " (median of " << r.rows[*r.best].runs.size() << " runs: "
        << fixed(r.rows[*r.best].metric(in.metric), 1) << ")";
    if (top && *top != *r.best)
      sum << "; the best median was " << r.rows[*top].spec.name() << " (" << fixed(r.rows[*top].metric(in.metric), 1)
          << "): within 5% (DeepSpeed's METRIC_PERCENT_DIFF_CONST) the lower stage, the smaller offload and the smaller "
             "planned peak win";
    sum << "\n";
  }
  sum << "\nmetric: " << tune_metric_name(in.metric)
      << (in.metric == TuneMetric::Latency ? " (ms per step, minimised)"
          : in.metric == TuneMetric::Flops ? " (training FLOPs per second, the whole job: tokens/s × FLOPs per token)"
                                           : " (tokens per second, the whole job)")
      << "\nstopped: " << r.stopped_because << "\n";
  if (!r.max_micro.empty()) {
    sum << "\nlargest micro batch the plan fits in 90% of the memory:\n";
    for (const auto& [cell, m] : r.max_micro) sum << "  " << cell.name() << ": " << m << "\n";
  }
  if (!r.dropped.empty()) {
    sum << "\ncells dropped before any trial (the plan's reason):\n";
    for (const auto& d : r.dropped) sum << "  " << d.cell.name() << ": " << d.reason << "\n";
  }
  sum << "\nDeepSpeed knobs not tuned (zerotrain does not act on them):\n";
  for (const auto& [k, why] : ignored_knobs()) sum << "  " << k << ": " << why << "\n";
  if (!r.best) sum << "\nno trial finished ok: no optimal configuration.\n";
  write_file(dir + "/summary.txt", sum.str(), written);

  if (!r.rows.empty()) {
    write_file(dir + "/tokens_per_s.svg", tokens_per_s_svg(r), written);
    write_file(dir + "/plan_vs_measured.svg", plan_vs_measured_svg(r), written);
  }
  if (r.best) {
    const TrialSpec& t = r.rows[*r.best].spec;
    write_file(dir + "/ds_config_optimal.json", trial_config(in.base_config, t, in.world_size).dump(2) + "\n", written);
    write_file(dir + "/cmd_optimal.txt", in.optimal_command + "\n", written);
  }
  return written;
}

}  // namespace zt
