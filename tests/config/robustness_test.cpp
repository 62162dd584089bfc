// Robustness: 10,000+ configs mutated from configs/ with a fixed seed (drop, duplicate, retype and
// rename keys, truncate or corrupt the text). load_config must never throw or crash, and must end
// either valid (with a consistent batch) or with at least one diagnostic that has a message.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "runtime/config/config_echo.h"
#include "runtime/config/config_load.h"

namespace zt {
namespace {

using json = nlohmann::json;

constexpr int kMutations = 12000;
constexpr uint32_t kSeed = 20240601;

std::vector<std::string> shipped_texts() {
  std::vector<std::string> v;
  for (const auto& e : std::filesystem::directory_iterator(ZT_CONFIGS_DIR)) {
    if (e.path().extension() != ".json") continue;
    std::ifstream in(e.path());
    std::stringstream ss;
    ss << in.rdbuf();
    v.push_back(ss.str());
  }
  std::sort(v.begin(), v.end());
  return v;
}

void objects(json& j, std::vector<json*>& out) {
  if (j.is_object()) {
    out.push_back(&j);
    for (auto& [k, v] : j.items()) objects(v, out);
  } else if (j.is_array()) {
    for (auto& v : j) objects(v, out);
  }
}

const char* kKeys[] = {"stage", "train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps",
                       "offload_param", "offload_optimizer", "device", "nvme_path", "ratio", "fp16", "bf16", "bfloat16",
                       "enabled", "cpu_offload", "cpu_offload_param", "stage3_max_live_parameters", "max_live_parameters",
                       "stage3_gather_fp16_weights_on_model_save", "type", "params", "lr", "betas", "max_grad_norm",
                       "loss_scale", "loss_scale_window", "total_num_steps", "zero_optimization", "scheduler", "optimizer"};

json random_value(std::mt19937& rng) {
  static const json pool[] = {32.0, true, false, "32", "auto", nullptr, json::array(), json::object(), -1, 0, 1, 3, 1e30,
                              "x", "nvme", "cpu", "none", 2.5, 18446744073709551615ull, -9223372036854775807ll, 5e8,
                              json::array({0.9, 0.999}), json::array({1, 2, 3}), json{{"device", "nvme"}},
                              json{{"stage", 3}}, "/nonexistent", "WarmupDecayLR", "OneBitAdam", 1e-300, -0.0};
  return pool[rng() % std::size(pool)];
}

std::string rename(const std::string& k, std::mt19937& rng) {
  std::string s = k;
  switch (rng() % 5) {
    case 0: if (!s.empty()) s.erase(rng() % s.size(), 1); break;
    case 1: s.insert(s.begin() + (s.empty() ? 0 : rng() % s.size()), char('a' + rng() % 26)); break;
    case 2: if (s.size() > 1) { size_t i = rng() % (s.size() - 1); std::swap(s[i], s[i + 1]); } break;
    case 3: s = s.rfind("stage3_", 0) == 0 ? s.substr(7) : "stage3_" + s; break;
    default: s = kKeys[rng() % std::size(kKeys)];
  }
  return s;
}

std::string mutate(const std::string& text, std::mt19937& rng) {
  json doc = json::parse(text);
  const int n = 1 + rng() % 3;
  std::string out;
  bool text_level = false;
  for (int i = 0; i < n; ++i) {
    std::vector<json*> objs;
    objects(doc, objs);
    json& o = *objs[rng() % objs.size()];
    std::vector<std::string> keys;
    for (auto& [k, v] : o.items()) keys.push_back(k);
    const int op = rng() % 6;
    if (op == 0 && !keys.empty()) {  // drop
      o.erase(keys[rng() % keys.size()]);
    } else if (op == 1 && !keys.empty()) {  // retype
      o[keys[rng() % keys.size()]] = random_value(rng);
    } else if (op == 2 && !keys.empty()) {  // rename
      const std::string k = keys[rng() % keys.size()];
      json v = o[k];
      o.erase(k);
      o[rename(k, rng)] = v;
    } else if (op == 3) {  // add a (possibly misplaced) key
      o[kKeys[rng() % std::size(kKeys)]] = random_value(rng);
    } else {
      text_level = true;
    }
  }
  out = doc.dump(rng() % 2 ? 2 : -1);
  if (!text_level) return out;
  switch (rng() % 4) {
    case 0: out.resize(rng() % (out.size() + 1)); break;  // truncate
    case 1: {  // duplicate a key: copy `"key": value,` right after an opening brace
      const size_t brace = out.find('{', rng() % out.size());
      if (brace != std::string::npos)
        out.insert(brace + 1, "\"" + std::string(kKeys[rng() % std::size(kKeys)]) + "\": " + random_value(rng).dump() + ",");
      break;
    }
    case 2: out[rng() % out.size()] = "{}[],:\"0a-.e \\\x01\xff"[rng() % 17]; break;  // corrupt one byte
    default: out.insert(rng() % out.size(), out.substr(rng() % out.size(), rng() % 40)); break;  // splice
  }
  return out;
}

TEST(Robustness, MutatedConfigsNeverCrash) {
  const auto base = shipped_texts();
  ASSERT_GE(base.size(), 10u);
  std::mt19937 rng(kSeed);
  const int worlds[] = {1, 2, 3, 4, 8, 64};
  int valid = 0, invalid = 0, parse_errors = 0;
  for (int i = 0; i < kMutations; ++i) {
    const std::string text = mutate(base[rng() % base.size()], rng);
    LoadOptions o;
    o.world_size = worlds[rng() % std::size(worlds)];
    o.world_source = WorldSizeSource::Flag;
    o.allow_unknown_keys = rng() % 4 == 0;
    if (rng() % 2) o.model_hidden = 128;
    if (rng() % 4) {
      o.flags.micro_batch = 1 + rng() % 8;
      o.flags.grad_accum = 1 + rng() % 4;
      o.flags.lr = 1e-3;
      o.flags.weight_decay = 0.0;
      o.flags.adam_beta1 = 0.9;
      o.flags.adam_beta2 = 0.99;
      o.flags.adam_eps = 1e-8;
      o.flags.max_grad_norm = 1.0;
      o.flags.warmup_steps = 5;
      o.flags.steps = 50;
    }
    LoadResult r;
    try {
      r = load_config_text(text, "mutant.json", o);
    } catch (const std::exception& e) {
      FAIL() << "threw on mutation " << i << ": " << e.what() << "\n" << text;
    }
    for (const auto& d : r.diagnostics.all()) ASSERT_FALSE(d.message.empty()) << "mutation " << i << "\n" << text;
    if (r.valid()) {
      ++valid;
      const Config& c = r.config;
      ASSERT_GT(c.train_micro_batch_size_per_gpu.value, 0) << text;
      ASSERT_GT(c.gradient_accumulation_steps.value, 0) << text;
      ASSERT_EQ(c.train_batch_size.value, c.train_micro_batch_size_per_gpu.value * c.gradient_accumulation_steps.value * o.world_size)
          << text;
      ASSERT_FALSE(c.fp16.enabled.value && c.bf16.enabled.value) << text;
      ASSERT_TRUE(c.zero_optimization.stage.value >= 0 && c.zero_optimization.stage.value <= 3) << text;
      (void)config_to_json(c);  // the echo must handle every valid config
    } else {
      ++invalid;
      ASSERT_GE(r.diagnostics.error_count(), 1u);
      if (r.diagnostics.all().front().message.rfind("not valid JSON", 0) == 0) ++parse_errors;
    }
  }
  RecordProperty("mutations", kMutations);
  std::printf("robustness: %d mutations (seed %u): %d valid, %d invalid (%d not JSON)\n", kMutations, kSeed, valid, invalid,
              parse_errors);
  EXPECT_GT(valid, 0);
  EXPECT_GT(invalid, kMutations / 4);
}

}  // namespace
}  // namespace zt
