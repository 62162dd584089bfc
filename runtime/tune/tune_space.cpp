// The search space's arithmetic: cell and trial names, the micro batches a policy allows, DeepSpeed's
// knob spaces less the keys zerotrain ignores, and a trial's ds_config.
#include "runtime/tune/tune_space.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "base/stage_traits.h"

namespace zt {

namespace {

// 50000000 -> "5e7", 1000000000 -> "1e9", 123 -> "123".
std::string short_number(int64_t v) {
  int e = 0;
  int64_t m = v;
  while (m >= 10 && m % 10 == 0) m /= 10, ++e;
  return e >= 3 ? std::to_string(m) + "e" + std::to_string(e) : std::to_string(v);
}

}  // namespace

std::string TuneCell::name() const {
  std::string s = "z";
  s += std::to_string(stage);
  if (offload != OffloadDevice::None) s.append("_").append(offload_name(offload));
  return s;
}

std::string TuneKnobs::text() const {
  std::string s;
  auto add = [&](const std::string& t) { s += (s.empty() ? "" : " ") + t; };
  if (overlap_comm) add(std::string("overlap_comm=") + (*overlap_comm ? "true" : "false"));
  if (reduce_bucket_size) add("reduce_bucket_size=" + short_number(*reduce_bucket_size));
  if (allgather_bucket_size) add("allgather_bucket_size=" + short_number(*allgather_bucket_size));
  return s.empty() ? "-" : s;
}

std::string TrialSpec::name() const {
  std::string s = cell.name() + "_gas" + std::to_string(gas) + "_tmbspg" + std::to_string(micro_batch);
  if (knobs.overlap_comm) s += std::string("_oc") + (*knobs.overlap_comm ? "1" : "0");
  if (knobs.reduce_bucket_size) s += "_rbs" + short_number(*knobs.reduce_bucket_size);
  if (knobs.allgather_bucket_size) s += "_abs" + short_number(*knobs.allgather_bucket_size);
  return s;
}

std::optional<int64_t> BatchPolicy::gas_for(int64_t micro) const {
  if (micro < min_micro || micro > max_micro) return std::nullopt;
  const int64_t w = std::max(1, world_size);
  int64_t g = gas;
  if (mode == Mode::KeepGlobal) {
    if (global_batch % (w * micro) != 0) return std::nullopt;
    g = global_batch / (w * micro);
  } else if (mode == Mode::MaxGlobal) {
    const int64_t per_rank = global_batch / w;
    if (micro > per_rank) return std::nullopt;
    g = std::max<int64_t>(1, per_rank / micro);
  }
  int64_t global = 0;
  if (__builtin_mul_overflow(micro, g, &global) || __builtin_mul_overflow(global, w, &global)) return std::nullopt;
  if (global < min_global) return std::nullopt;
  return g;
}

int64_t BatchPolicy::largest_micro() const {
  const int64_t w = std::max(1, world_size);
  int64_t top = max_micro;
  if (mode != Mode::FixedGas) top = std::min(top, global_batch / w);
  for (int64_t m = top; m >= min_micro; --m)
    if (gas_for(m)) return m;
  return 0;
}

std::vector<int64_t> BatchPolicy::candidates(int64_t max_fit, int n) const {
  std::set<int64_t> allowed;
  for (int64_t p = 1; p <= max_fit; p *= 2)
    if (gas_for(p)) allowed.insert(p);
  if (gas_for(max_fit)) allowed.insert(max_fit);
  if (mode == Mode::KeepGlobal)  // only divisors qualify: the largest ones below the fit, too
    for (int64_t m = max_fit; m >= min_micro && int(allowed.size()) < n + 1; --m)
      if (gas_for(m)) allowed.insert(m);
  for (int64_t m = min_micro; m <= max_fit; ++m)
    if (gas_for(m)) {
      allowed.insert(m);  // the smallest allowed micro batch is always a candidate
      break;
    }
  std::vector<int64_t> all(allowed.begin(), allowed.end());
  if (int(all.size()) <= n + 1) return all;
  std::vector<int64_t> out{all.front()};
  out.insert(out.end(), all.end() - n, all.end());
  return out;
}

const std::vector<std::pair<std::string, std::string>>& ignored_knobs() {
  static const std::vector<std::pair<std::string, std::string>> k = {
      {"contiguous_gradients", "parsed only: backward writes whole-unit gradient buffers either way"},
      {"reduce_scatter", "zerotrain always reduce-scatters at stages 1-3 (false is accepted with a warning)"},
      {"allgather_partitions", "parsed only: updated shards are always all-gathered"},
      {"allgather_bucket_size at stage 3", "stage 3 gathers by unit and prefetch bucket, not this size"},
  };
  return k;
}

std::vector<TuneKnobs> knob_space(int stage, int64_t params) {
  const StageTraits traits = stage_traits(stage);
  if (traits.all_reduces_grads()) return {};
  std::vector<int64_t> buckets;
  for (int64_t b : {int64_t(50000000), int64_t(500000000), int64_t(1000000000)}) {
    // Buckets at or above the model cut one bucket: keep the first such size only.
    if (!buckets.empty() && buckets.back() >= params) break;
    buckets.push_back(b);
  }
  std::vector<std::optional<bool>> overlap = {std::nullopt};
  if (traits.shards_grads) overlap = {true, false};  // DeepSpeed tunes overlap_comm from stage 2
  std::vector<std::optional<int64_t>> gather = {std::nullopt};
  if (traits.gathers_updated_shards()) gather.assign(buckets.begin(), buckets.end());  // stages 1-2 gather in these buckets
  std::vector<TuneKnobs> out;
  for (const auto& oc : overlap)
    for (int64_t rb : buckets)
      for (const auto& ab : gather) {
        TuneKnobs k;
        k.overlap_comm = oc;
        k.reduce_bucket_size = rb;
        k.allgather_bucket_size = ab;
        out.push_back(k);
      }
  return out;
}

nlohmann::json trial_config(const nlohmann::json& base, const TrialSpec& t, int world_size) {
  nlohmann::json c = base;
  c.erase("autotuning");
  nlohmann::json& z = c["zero_optimization"];
  if (!z.is_object()) z = nlohmann::json::object();
  z["stage"] = t.cell.stage;
  if (t.cell.offload == OffloadDevice::None) {
    if (z.contains("offload_optimizer")) z.erase("offload_optimizer");
  } else {
    nlohmann::json& off = z["offload_optimizer"];
    if (!off.is_object()) off = nlohmann::json::object();
    off["device"] = offload_name(t.cell.offload);
  }
  if (!stage_traits(t.cell.stage).gathers_params() && z.contains("offload_param")) z.erase("offload_param");
  c["train_micro_batch_size_per_gpu"] = t.micro_batch;
  c["gradient_accumulation_steps"] = t.gas;
  c["train_batch_size"] = t.micro_batch * t.gas * world_size;
  if (t.knobs.overlap_comm) z["overlap_comm"] = *t.knobs.overlap_comm;
  if (t.knobs.reduce_bucket_size) z["reduce_bucket_size"] = *t.knobs.reduce_bucket_size;
  if (t.knobs.allgather_bucket_size) z["allgather_bucket_size"] = *t.knobs.allgather_bucket_size;
  return c;
}

}  // namespace zt
