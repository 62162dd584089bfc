// The shipped configs: every file in configs/ carries its own numbers and passes with no flags at
// all; every HF Trainer template in configs/hf/ passes with the flags an HF Trainer user passes and
// names the flag for each "auto" without them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/config/config_test_util.h"

namespace zt {
namespace {

// A 2-rank run of --model small (hidden size 128), as configs/README.md and scripts/run_default.sh.
LoadOptions two_ranks() {
  LoadOptions o;
  o.world_size = 2;
  o.world_source = WorldSizeSource::Flag;
  o.model_hidden = 128;
  return o;
}

// The HF Trainer's flags for the templates (configs/README.md).
LoadOptions hf_flags() {
  LoadOptions o = two_ranks();
  auto& f = o.flags;
  f.micro_batch = 4;
  f.grad_accum = 1;
  f.lr = 3e-3;
  f.weight_decay = 0.1;
  f.adam_beta1 = 0.9;
  f.adam_beta2 = 0.95;
  f.adam_eps = 1e-8;
  f.max_grad_norm = 1.0;
  f.warmup_steps = 10;
  f.steps = 150;
  f.bf16 = true;
  return o;
}

std::vector<std::string> json_files(const std::string& dir) {
  std::vector<std::string> v;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".json") v.push_back(e.path().string());
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<std::string> concrete() { return json_files(ZT_CONFIGS_DIR); }
std::vector<std::string> templates() { return json_files(std::string(ZT_CONFIGS_DIR) + "/hf"); }

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ShippedConfigs, AllArePresent) {
  const auto c = concrete(), t = templates();
  for (const char* name : {"stage0", "stage1", "stage2", "stage3", "offload_cpu", "offload_stage3_cpu", "offload_nvme",
                           "fp16", "bf16", "grad_accum", "onebit_adam", "zero_one_adam"})
    EXPECT_NE(std::find(c.begin(), c.end(), std::string(ZT_CONFIGS_DIR) + "/" + name + ".json"), c.end()) << name;
  for (const char* name : {"zero2", "zero3", "zero3_offload"})
    EXPECT_NE(std::find(t.begin(), t.end(), std::string(ZT_CONFIGS_DIR) + "/hf/" + name + ".json"), t.end()) << name;
}

// No "auto" anywhere, no flag needed, no warning: the file is the whole run.
TEST(ShippedConfigs, ConcreteConfigsPassWithoutFlags) {
  for (const auto& path : concrete()) {
    EXPECT_EQ(read(path).find("\"auto\""), std::string::npos) << path;
    const auto r = load_config(path, two_ranks());
    EXPECT_TRUE(r.valid()) << path << "\n" << test::dump(r);
    EXPECT_EQ(r.diagnostics.warning_count(), 0u) << path << "\n" << test::dump(r);
    EXPECT_EQ(r.config.train_batch_size.value, 8) << path;
    EXPECT_GT(r.config.scheduler.warmup_num_steps.value, 0) << path;
    EXPECT_EQ(r.config.gradient_clipping.value, 1.0) << path;
  }
}

// The same files train on GPUs: the CUDA backend computes in bf16, and every concrete config but the
// fp16 and 1-bit Adam examples (CPU backend only, configs/README.md) asks for it.
TEST(ShippedConfigs, ConcreteConfigsAreValidForTheCudaBackend) {
  for (const auto& path : concrete()) {
    LoadOptions o = two_ranks();
    o.backend = ComputeBackend::Cuda;
    const auto r = load_config(path, o);
    if (path.find("/fp16.json") != std::string::npos) {
      EXPECT_NE(test::find(r, "fp16.enabled", "computes in bf16"), nullptr) << test::dump(r);
      continue;
    }
    if (path.find("/onebit_adam.json") != std::string::npos || path.find("/zero_one_adam.json") != std::string::npos) {
      // fp16, and the compressed optimizers on host buffers only
      EXPECT_NE(test::find(r, "fp16.enabled", "computes in bf16"), nullptr) << test::dump(r);
      EXPECT_NE(test::find(r, "optimizer.type", "is not built yet"), nullptr) << test::dump(r);
      continue;
    }
    EXPECT_TRUE(r.valid()) << path << "\n" << test::dump(r);
    EXPECT_TRUE(r.config.bf16.enabled.value) << path;
  }
}

// Stages 0-3 and offload share every training number, so they end with the same parameters.
TEST(ShippedConfigs, StagesShareTheirNumbers) {
  const std::string dir = ZT_CONFIGS_DIR;
  const auto ref = load_config(dir + "/stage0.json", two_ranks()).config;
  for (const char* name : {"stage1", "stage2", "stage3", "offload_cpu", "offload_stage3_cpu", "offload_nvme", "fp16", "bf16"}) {
    const auto c = load_config(dir + "/" + name + ".json", two_ranks()).config;
    EXPECT_EQ(c.train_micro_batch_size_per_gpu.value, ref.train_micro_batch_size_per_gpu.value) << name;
    EXPECT_EQ(c.gradient_accumulation_steps.value, ref.gradient_accumulation_steps.value) << name;
    EXPECT_EQ(c.optimizer.lr.value, ref.optimizer.lr.value) << name;
    EXPECT_EQ(c.optimizer.betas.value, ref.optimizer.betas.value) << name;
    EXPECT_EQ(c.optimizer.weight_decay.value, ref.optimizer.weight_decay.value) << name;
    EXPECT_EQ(c.scheduler.type.value, ref.scheduler.type.value) << name;
    EXPECT_EQ(c.scheduler.warmup_num_steps.value, ref.scheduler.warmup_num_steps.value) << name;
    EXPECT_EQ(c.scheduler.warmup_max_lr.value, ref.scheduler.warmup_max_lr.value) << name;
  }
}

TEST(ShippedConfigs, StagesAndOffloadAsNamed) {
  const std::string dir = ZT_CONFIGS_DIR;
  for (int s = 0; s <= 3; ++s)
    EXPECT_EQ(load_config(dir + "/stage" + std::to_string(s) + ".json", two_ranks()).config.zero_optimization.stage.value, s);
  EXPECT_EQ(load_config(dir + "/offload_cpu.json", two_ranks()).config.zero_optimization.offload_optimizer.device.value, "cpu");
  const auto nv = load_config(dir + "/offload_nvme.json", two_ranks()).config.zero_optimization;
  EXPECT_EQ(nv.offload_optimizer.device.value, "nvme");
  EXPECT_EQ(nv.offload_param.device.value, "nvme");
  EXPECT_TRUE(load_config(dir + "/fp16.json", two_ranks()).config.fp16.enabled.value);
  EXPECT_TRUE(load_config(dir + "/bf16.json", two_ranks()).config.bf16.enabled.value);
  const auto ga = load_config(dir + "/grad_accum.json", two_ranks()).config;
  EXPECT_EQ(ga.gradient_accumulation_steps.value, 4);
  EXPECT_EQ(ga.schedule_steps(), std::optional<int64_t>(150));
  EXPECT_EQ(ga.run_steps.value, 150);  // without --steps the run is the whole schedule
}

TEST(ShippedConfigs, TemplatesPassWithTheTrainerFlags) {
  for (const auto& path : templates()) {
    const std::string text = read(path);
    EXPECT_NE(text.find("\"auto\""), std::string::npos) << path;
    const auto r = load_config(path, hf_flags());
    EXPECT_TRUE(r.valid()) << path << "\n" << test::dump(r);
    EXPECT_EQ(r.diagnostics.warning_count(), 0u) << path << "\n" << test::dump(r);
    EXPECT_EQ(r.config.train_batch_size.value, 8) << path;
    EXPECT_TRUE(r.config.bf16.enabled.value) << path;
    EXPECT_EQ(r.config.run_steps.value, 150) << path;
  }
}

// Without the flags every "auto" takes the HF Trainer's default and a warning names the flag; the
// templates' WarmupLR is then refused for DeepSpeed's reason (0 warmup steps, which DeepSpeed 0.19's
// lr_schedules.py rejects with ValueError), naming the flags that fix it.
TEST(ShippedConfigs, TemplatesWithoutFlagsNameTheFlag) {
  for (const auto& path : templates()) {
    LoadOptions o;
    o.model_hidden = 128;
    const auto r = load_config(path, o);
    EXPECT_NE(test::find(r, "train_micro_batch_size_per_gpu", "--micro-batch", Severity::Warning), nullptr)
        << path << "\n" << test::dump(r);
    EXPECT_NE(test::find(r, "scheduler.params.warmup_num_steps", "--warmup-steps"), nullptr) << path << "\n" << test::dump(r);
    EXPECT_EQ(r.diagnostics.error_count(), 1u) << path << "\n" << test::dump(r);
  }
}

}  // namespace
}  // namespace zt
