// Tuner: plan the cells, search in score order with early stopping and the cap, re-run the best
// three, pick by median.
#include "runtime/tune/tuner.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <sstream>

namespace zt {

const char* trial_status_name(TrialStatus s) {
  switch (s) {
    case TrialStatus::Ok: return "ok";
    case TrialStatus::Oom: return "oom";
    case TrialStatus::Error: return "error";
    case TrialStatus::Timeout: return "timeout";
    case TrialStatus::Skipped: return "skipped";
  }
  return "?";
}

namespace {

constexpr double kNoiseShare = 0.05;  // DeepSpeed's METRIC_PERCENT_DIFF_CONST

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

bool minimises(TuneMetric m) { return m == TuneMetric::Latency; }

// How much better a is than b (> 1: better), for a metric either maximised or minimised.
double gain(TuneMetric m, double a, double b) {
  if (minimises(m)) return a > 0 ? b / a : 0;
  return b > 0 ? a / b : (a > 0 ? 1e300 : 1);
}

// The order of preference between two trials of equal merit: lower stage, less offload, smaller
// planned peak, then the name.
bool simpler(const TrialSpec& a, double peak_a, const TrialSpec& b, double peak_b) {
  if (a.cell.stage != b.cell.stage) return a.cell.stage < b.cell.stage;
  if (a.cell.offload != b.cell.offload) return int(a.cell.offload) < int(b.cell.offload);
  if (peak_a != peak_b) return peak_a < peak_b;
  return a.name() < b.name();
}

void note_stop(TuneResult& r, const std::string& why) {
  r.stopped_because += (r.stopped_because.empty() ? "" : "; ") + why;
}

std::string rate_text(double v) {
  std::ostringstream o;
  o.precision(v >= 100 ? 0 : 2);
  o << std::fixed << v;
  return o.str();
}

}  // namespace

bool TrialRow::ok() const {
  if (runs.empty()) return false;
  for (const auto& r : runs)
    if (r.status != TrialStatus::Ok) return false;
  return true;
}

double TrialRow::median_tokens_per_s() const {
  std::vector<double> v;
  for (const auto& r : runs) v.push_back(r.tokens_per_s);
  return median(v);
}

double TrialRow::median_step_ms() const {
  std::vector<double> v;
  for (const auto& r : runs) v.push_back(r.step_ms);
  return median(v);
}

double TrialRow::metric(TuneMetric m) const {
  switch (m) {
    case TuneMetric::Throughput: return median_tokens_per_s();
    case TuneMetric::Latency: return median_step_ms();
    case TuneMetric::Flops: return median_tokens_per_s() * plan.flops_per_token;
  }
  return 0;
}

Tuner::Tuner(TuneSetup setup, TunePlanner& planner, TrialRunner& runner, TuneProgress progress)
    : s_(std::move(setup)), planner_(planner), runner_(runner), progress_(std::move(progress)) {}

int64_t Tuner::largest_fit(const TuneCell& cell) {
  auto fits = [&](int64_t m) {
    TrialSpec t{cell, m, s_.batch.gas_for(m).value_or(1), {}};
    return planner_.assess(t).fits;
  };
  int64_t lo = s_.batch.min_micro, hi = s_.batch.largest_micro();
  if (hi < lo || !fits(lo)) return 0;
  if (fits(hi)) return hi;
  while (hi - lo > 1) {  // fits(lo), !fits(hi): memory grows with the micro batch
    const int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

std::vector<Tuner::Candidate> Tuner::plan_cells(TuneResult& r) {
  std::vector<Candidate> out;
  for (const TuneCell& cell : s_.cells) {
    if (s_.batch.largest_micro() == 0) {
      r.dropped.push_back({cell, "no micro batch meets the batch bounds (min/max micro batch, global batch)"});
      continue;
    }
    const int64_t low = s_.batch.min_micro;
    TrialSpec first{cell, low, s_.batch.gas_for(low).value_or(1), {}};
    const PlanVerdict v = planner_.assess(first);
    if (!v.fits) {
      r.dropped.push_back({cell, v.reason.empty() ? "the plan does not fit micro batch " + std::to_string(low) : v.reason});
      continue;
    }
    const int64_t mx = largest_fit(cell);
    r.max_micro.push_back({cell, mx});
    for (int64_t m : s_.batch.candidates(mx, s_.options.num_tuning_micro_batch_sizes)) {
      TrialSpec t{cell, m, *s_.batch.gas_for(m), {}};
      const PlanVerdict pv = planner_.assess(t);
      if (pv.fits) out.push_back({t, pv});
    }
  }
  return out;
}

double Tuner::predicted_metric(const Candidate& c, const TuneResult& r) const {
  double c_token = 1e-6, bw = 1e9;  // before any measurement
  std::vector<double> per_token;
  double bytes = 0, busy = 0;
  for (const TrialRow& row : r.rows) {
    if (row.runs.empty() || row.runs[0].status != TrialStatus::Ok || row.plan.tokens_per_step <= 0) continue;
    const TrialOutcome& o = row.runs[0];
    per_token.push_back(std::max(0.0, o.step_ms / 1e3 - o.comm_busy_s_per_step) / row.plan.tokens_per_step);
    bytes += o.comm_bytes_per_step;
    busy += o.comm_busy_s_per_step;
  }
  if (!per_token.empty()) c_token = std::max(1e-12, median(per_token));
  if (bytes > 0 && busy > 0) bw = bytes / busy;
  const double step = c_token * c.plan.tokens_per_step + (c.plan.wire_bytes_per_step + c.plan.offload_bytes_per_step) / bw;
  const double tokens_per_s = step > 0 ? c.plan.tokens_per_step / step : 0;
  switch (s_.options.metric) {
    case TuneMetric::Throughput: return tokens_per_s;
    case TuneMetric::Latency: return step * 1e3;
    case TuneMetric::Flops: return tokens_per_s * c.plan.flops_per_token;
  }
  return 0;
}

void Tuner::run_one(const Candidate& c, TuneResult& r) {
  TrialRow row{c.spec, c.plan, {}};
  row.runs.push_back(runner_.run(c.spec, 0));
  r.rows.push_back(row);
  ++r.trials;
  if (!progress_) return;
  const TrialOutcome& o = row.runs.back();
  std::optional<size_t> best;
  for (size_t i = 0; i < r.rows.size(); ++i)
    if (r.rows[i].ok() && (!best || gain(s_.options.metric, r.rows[i].metric(s_.options.metric),
                                         r.rows[*best].metric(s_.options.metric)) > 1))
      best = i;
  double wall = 0;
  for (const auto& x : r.rows) wall += x.runs[0].wall_s;
  const int left = std::max(0, planned_runs_ - r.trials);
  std::string line = "tune: trial " + std::to_string(r.trials) + " of at most " + std::to_string(planned_runs_) + ": " +
                     c.spec.name() + ": " + trial_status_name(o.status);
  if (o.status == TrialStatus::Ok) line += ", " + rate_text(o.tokens_per_s) + " tokens/s, " + rate_text(o.step_ms) + " ms/step";
  else line += " (exit " + std::to_string(o.exit_code) + (o.detail.empty() ? "" : ": " + o.detail) + ")";
  if (o.reused) line += " [reused]";
  if (best) line += "; best " + r.rows[*best].spec.name() + " " + rate_text(r.rows[*best].median_tokens_per_s()) + " tokens/s";
  line += "; ETA " + std::to_string(int(std::lround(wall / std::max(1, r.trials) * left))) + " s";
  progress_(line);
}

bool Tuner::search(std::vector<Candidate> pending, TuneResult& r, const std::string& phase) {
  const TuneMetric m = s_.options.metric;
  std::optional<double> best;
  for (const TrialRow& row : r.rows)
    if (row.ok() && (!best || gain(m, row.metric(m), *best) > 1)) best = row.metric(m);
  if (s_.options.tuner_type == TunerType::Random) {
    std::mt19937_64 rng(s_.seed);
    std::shuffle(pending.begin(), pending.end(), rng);
  }
  int since = 0;
  while (!pending.empty()) {
    if (r.trials >= s_.options.tuner_num_trials) {
      note_stop(r, "tuner_num_trials (" + std::to_string(s_.options.tuner_num_trials) + ") reached in the " + phase);
      return false;
    }
    size_t pick = 0;
    if (s_.options.tuner_type != TunerType::Random) {
      std::vector<double> score(pending.size());
      for (size_t i = 0; i < pending.size(); ++i) score[i] = predicted_metric(pending[i], r);
      for (size_t i = 1; i < pending.size(); ++i) {
        const double g = gain(m, score[i], score[pick]);
        if (g > 1 || (g == 1 && simpler(pending[i].spec, pending[i].plan.peak_bytes, pending[pick].spec,
                                         pending[pick].plan.peak_bytes)))
          pick = i;
      }
    }
    const Candidate c = pending[pick];
    pending.erase(pending.begin() + long(pick));
    run_one(c, r);
    const TrialRow& row = r.rows.back();
    if (row.runs.back().stops_search) {
      note_stop(r, "trial " + row.spec.name() + " failed with exit " + std::to_string(row.runs.back().exit_code) +
                       ", which every later trial would repeat: " + row.runs.back().detail);
      r.aborted = true;
      return false;
    }
    if (row.ok() && (!best || gain(m, row.metric(m), *best) >= 1 + kNoiseShare)) {
      best = row.metric(m);
      since = 0;
    } else {
      if (row.ok() && gain(m, row.metric(m), *best) > 1) best = row.metric(m);
      if (++since >= s_.options.tuner_early_stopping) {
        note_stop(r, "early stopping in the " + phase + ": " + std::to_string(since) +
                         " trials without a 5% gain (tuner_early_stopping)");
        return true;
      }
    }
  }
  note_stop(r, phase + ": every candidate tried");
  return true;
}

void Tuner::repeat_best(TuneResult& r) {
  if (s_.repeats <= 1) return;
  const TuneMetric m = s_.options.metric;
  // Until the best three by median all have their repeats: a lucky first run that re-runs slower
  // gives its place to the next, which is re-run in turn.
  while (true) {
    std::vector<size_t> ok;
    for (size_t i = 0; i < r.rows.size(); ++i)
      if (r.rows[i].ok()) ok.push_back(i);
    std::stable_sort(ok.begin(), ok.end(), [&](size_t a, size_t b) {
      return gain(m, r.rows[a].metric(m), r.rows[b].metric(m)) > 1;
    });
    if (ok.size() > 3) ok.resize(3);
    std::optional<size_t> next;
    for (size_t i : ok)
      if (int(r.rows[i].runs.size()) < s_.repeats) {
        next = i;
        break;
      }
    if (!next) return;
    TrialRow& row = r.rows[*next];
    const int k = int(row.runs.size());
    row.runs.push_back(runner_.run(row.spec, k));
    if (progress_) {
      const TrialOutcome& o = row.runs.back();
      progress_("tune: repeat " + std::to_string(k + 1) + " of " + std::to_string(s_.repeats) + ": " + row.spec.name() +
                ": " + trial_status_name(o.status) +
                (o.status == TrialStatus::Ok ? ", " + rate_text(o.tokens_per_s) + " tokens/s" : "") +
                (o.reused ? " [reused]" : ""));
    }
  }
}

void Tuner::pick(TuneResult& r) const {
  const TuneMetric m = s_.options.metric;
  // Compare like with like: once the best were re-run, the pick is among them (by median).
  const size_t most_runs = size_t(std::max(1, s_.repeats));
  std::optional<size_t> top;
  for (size_t i = 0; i < r.rows.size(); ++i)
    if (r.rows[i].ok() && r.rows[i].runs.size() == most_runs &&
        (!top || gain(m, r.rows[i].metric(m), r.rows[*top].metric(m)) > 1))
      top = i;
  if (!top) return;
  size_t choice = *top;
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const TrialRow& row = r.rows[i];
    if (!row.ok() || row.runs.size() != most_runs) continue;
    if (gain(m, r.rows[*top].metric(m), row.metric(m)) <= 1 + kNoiseShare &&
        simpler(row.spec, row.plan.peak_bytes, r.rows[choice].spec, r.rows[choice].plan.peak_bytes))
      choice = i;
  }
  r.best = choice;
}

TuneResult Tuner::run() {
  TuneResult r;
  std::vector<Candidate> fast = plan_cells(r);
  const int knob_trials = s_.options.fast ? 0 : int(knob_space(3, s_.params).size());
  planned_runs_ = std::min<int>(s_.options.tuner_num_trials, int(fast.size()) + knob_trials);
  const bool room = search(fast, r, "micro-batch search");
  if (r.aborted) return r;
  if (room && !s_.options.fast && !r.rows.empty()) {
    // The best trial's stage knobs, at its cell and micro batch (DeepSpeed tunes them after the micro batch).
    std::optional<size_t> best;
    for (size_t i = 0; i < r.rows.size(); ++i)
      if (r.rows[i].ok() && (!best || gain(s_.options.metric, r.rows[i].metric(s_.options.metric),
                                           r.rows[*best].metric(s_.options.metric)) > 1))
        best = i;
    if (best) {
      std::vector<Candidate> knobs;
      for (const TuneKnobs& k : knob_space(r.rows[*best].spec.cell.stage, s_.params)) {
        TrialSpec t = r.rows[*best].spec;
        t.knobs = k;
        const PlanVerdict v = planner_.assess(t);
        if (v.fits) knobs.push_back({t, v});
      }
      planned_runs_ = std::min<int>(s_.options.tuner_num_trials, r.trials + int(knobs.size()));
      search(knobs, r, "knob search");
    }
  }
  repeat_best(r);
  pick(r);
  return r;
}

}  // namespace zt
