// read_autotuning_options: the `autotuning` block's keys with DeepSpeed's code defaults
// (deepspeed/autotuning/constants.py), each wrong type or value one error naming the key.
#include "runtime/tune/autotuning_options.h"

#include <limits>
#include <set>

#include <nlohmann/json.hpp>

namespace zt {

const char* tune_metric_name(TuneMetric m) {
  switch (m) {
    case TuneMetric::Throughput: return "throughput";
    case TuneMetric::Latency: return "latency";
    case TuneMetric::Flops: return "flops";
  }
  return "?";
}

const char* tuner_type_name(TunerType t) {
  switch (t) {
    case TunerType::GridSearch: return "gridsearch";
    case TunerType::Random: return "random";
    case TunerType::ModelBased: return "model_based";
  }
  return "?";
}

namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

struct BlockReader {
  const nlohmann::json& block;
  const std::string& file;
  Diagnostics& d;

  std::string path(const char* key) const { return "autotuning." + std::string(key); }
  const nlohmann::json* find(const char* key) const {
    auto it = block.find(key);
    return it == block.end() || it->is_null() ? nullptr : &*it;
  }
  void boolean(const char* key, bool& out) {
    if (const auto* v = find(key)) {
      if (v->is_boolean()) out = v->get<bool>();
      else d.error(path(key), v->dump(), "must be true or false", "write " + path(key) + ": true or false in " + file);
    }
  }
  // An integer >= lo (DeepSpeed's JSON may write 1e3: a whole number in a float is accepted).
  template <class T>
  bool integer(const char* key, T& out, int64_t lo) {
    const auto* v = find(key);
    if (!v) return false;
    const bool whole = v->is_number_integer() || (v->is_number_float() && v->get<double>() == double(int64_t(v->get<double>())));
    if (!whole || v->is_boolean()) {
      d.error(path(key), v->dump(), "must be a whole number", "write a number like 8 in " + file);
      return false;
    }
    const bool in_range = v->is_number_unsigned() ? v->get<uint64_t>() <= uint64_t(std::numeric_limits<T>::max())
                          : v->is_number_integer() ? v->get<int64_t>() <= int64_t(std::numeric_limits<T>::max())
                                                   : v->get<double>() <= double(std::numeric_limits<T>::max());
    if (!in_range) {
      d.error(path(key), v->dump(), "is too large", "write a number up to " + std::to_string(std::numeric_limits<T>::max()));
      return false;
    }
    const int64_t x = v->is_number_integer() ? v->get<int64_t>() : int64_t(v->get<double>());
    if (x < lo) {
      d.error(path(key), v->dump(), "must be at least " + std::to_string(lo), "raise it to " + std::to_string(lo) + " or more");
      return false;
    }
    out = T(x);
    return true;
  }
  void text(const char* key, std::string& out) {
    if (const auto* v = find(key)) {
      if (v->is_string() && !v->get<std::string>().empty()) out = v->get<std::string>();
      else d.error(path(key), v->dump(), "must be a non-empty folder name", "write a path like \"" + out + "\"");
    }
  }
};

}  // namespace

AutotuningOptions read_autotuning_options(const nlohmann::json& block, const std::string& file, Diagnostics& d) {
  AutotuningOptions o;
  if (block.is_null()) return o;
  if (!block.is_object()) {
    d.error("autotuning", block.dump(), "must be an object", "write \"autotuning\": {\"enabled\": true, ...} in " + file);
    return o;
  }
  BlockReader r{block, file, d};
  r.boolean("enabled", o.enabled);
  r.boolean("fast", o.fast);
  r.boolean("overwrite", o.overwrite);
  if (const auto* v = r.find("metric")) {
    const std::string m = v->is_string() ? lower(v->get<std::string>()) : "";
    if (m == "throughput") o.metric = TuneMetric::Throughput;
    else if (m == "latency") o.metric = TuneMetric::Latency;
    else if (m == "flops") o.metric = TuneMetric::Flops;
    else d.error("autotuning.metric", v->dump(), "not a metric the tuner knows", "use \"throughput\", \"latency\" or \"flops\"");
  }
  r.integer("start_profile_step", o.start_profile_step, 1);
  r.integer("end_profile_step", o.end_profile_step, 1);
  if (o.end_profile_step < o.start_profile_step)
    d.error("autotuning.end_profile_step", std::to_string(o.end_profile_step),
            "is before start_profile_step " + std::to_string(o.start_profile_step),
            "set end_profile_step at or after start_profile_step");
  if (const auto* v = r.find("tuner_type")) {
    const std::string t = v->is_string() ? lower(v->get<std::string>()) : "";
    if (t == "gridsearch") o.tuner_type = TunerType::GridSearch;
    else if (t == "random") o.tuner_type = TunerType::Random;
    else if (t == "model_based") {
      o.tuner_type = TunerType::ModelBased;
      d.warning("autotuning.tuner_type", v->dump(),
                "zerotrain trains no cost model: trials follow the memory plan's score, as gridsearch does",
                "write \"gridsearch\" to silence this");
    } else {
      d.error("autotuning.tuner_type", v->dump(), "not a tuner type", "use \"gridsearch\", \"random\" or \"model_based\"");
    }
  }
  r.integer("tuner_early_stopping", o.tuner_early_stopping, 1);
  r.integer("tuner_num_trials", o.tuner_num_trials, 1);
  int64_t max_batch = 0;
  if (r.integer("max_train_batch_size", max_batch, 1)) o.max_train_batch_size = max_batch;
  r.integer("min_train_batch_size", o.min_train_batch_size, 1);
  r.integer("min_train_micro_batch_size_per_gpu", o.min_train_micro_batch_size_per_gpu, 1);
  r.integer("max_train_micro_batch_size_per_gpu", o.max_train_micro_batch_size_per_gpu, 1);
  if (o.max_train_micro_batch_size_per_gpu > kMaxTunedMicroBatch)
    d.error("autotuning.max_train_micro_batch_size_per_gpu", std::to_string(o.max_train_micro_batch_size_per_gpu),
            "is above the largest micro batch the tuner searches (" + std::to_string(kMaxTunedMicroBatch) + ")",
            "write at most " + std::to_string(kMaxTunedMicroBatch) + " (DeepSpeed's default is 1024)");
  if (o.max_train_micro_batch_size_per_gpu < o.min_train_micro_batch_size_per_gpu)
    d.error("autotuning.max_train_micro_batch_size_per_gpu", std::to_string(o.max_train_micro_batch_size_per_gpu),
            "is below min_train_micro_batch_size_per_gpu " + std::to_string(o.min_train_micro_batch_size_per_gpu),
            "raise the maximum or lower the minimum");
  if (o.max_train_batch_size && *o.max_train_batch_size < o.min_train_batch_size)
    d.error("autotuning.max_train_batch_size", std::to_string(*o.max_train_batch_size),
            "is below min_train_batch_size " + std::to_string(o.min_train_batch_size), "raise the maximum or lower the minimum");
  r.integer("num_tuning_micro_batch_sizes", o.num_tuning_micro_batch_sizes, 1);
  int mp = 1;
  if (r.integer("mp_size", mp, 1) && mp != 1)
    d.error("autotuning.mp_size", std::to_string(mp), "zerotrain has no model (tensor) parallelism to tune with",
            "remove mp_size or set it to 1");
  if (r.find("arg_mappings"))
    d.warning("autotuning.arg_mappings", "", "ignored: each trial is a zerotrain run whose batch comes from its ds_config",
              "remove arg_mappings to silence this");
  for (const char* key : {"metric_path", "model_info", "model_info_path"})
    if (r.find(key))
      d.warning(r.path(key), "", "ignored: zerotrain's trials write their metrics and know the model they train",
                "remove it to silence this");
  r.text("results_dir", o.results_dir);
  r.text("exps_dir", o.exps_dir);
  static const std::set<std::string> known = {
      "enabled", "fast", "overwrite", "metric", "start_profile_step", "end_profile_step", "tuner_type",
      "tuner_early_stopping", "tuner_num_trials", "max_train_batch_size", "min_train_batch_size",
      "min_train_micro_batch_size_per_gpu", "max_train_micro_batch_size_per_gpu", "num_tuning_micro_batch_sizes",
      "mp_size", "arg_mappings", "metric_path", "model_info", "model_info_path", "results_dir", "exps_dir"};
  for (const auto& [key, value] : block.items())
    if (!known.count(key))
      d.warning("autotuning." + key, value.dump(), "not a key of DeepSpeed's autotuning block: ignored",
                "check the spelling against DeepSpeed's autotuning keys");
  return o;
}

}  // namespace zt
