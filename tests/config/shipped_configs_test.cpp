// Every file in configs/ passes with the flags written at the top of configs/README.md, and is
// refused (naming the flag) without them.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/config/config_test_util.h"

namespace zt {
namespace {

// The flags of configs/README.md (and scripts/run_default.sh); --model small has hidden size 128.
LoadOptions readme_flags() {
  LoadOptions o;
  o.world_size = 2;
  o.world_source = WorldSizeSource::Flag;
  o.model_hidden = 128;
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
  return o;
}

std::vector<std::string> shipped() {
  std::vector<std::string> v;
  for (const auto& e : std::filesystem::directory_iterator(ZT_CONFIGS_DIR))
    if (e.path().extension() == ".json") v.push_back(e.path().string());
  std::sort(v.begin(), v.end());
  return v;
}

TEST(ShippedConfigs, AllArePresent) {
  const auto v = shipped();
  for (const char* name : {"stage0", "stage1", "stage2", "stage3", "offload_cpu", "offload_stage3_cpu", "offload_nvme", "fp16", "bf16", "grad_accum",
                           "hf_auto"}) {
    const std::string want = std::string(ZT_CONFIGS_DIR) + "/" + name + ".json";
    EXPECT_NE(std::find(v.begin(), v.end(), want), v.end()) << want;
  }
}

TEST(ShippedConfigs, PassWithTheReadmeFlags) {
  for (const auto& path : shipped()) {
    const auto r = load_config(path, readme_flags());
    EXPECT_TRUE(r.valid()) << path << "\n" << test::dump(r);
    EXPECT_EQ(r.diagnostics.warning_count(), 0u) << path << "\n" << test::dump(r);
    EXPECT_EQ(r.config.train_batch_size.value, 8) << path;
  }
}

TEST(ShippedConfigs, StagesAndOffloadAsNamed) {
  const std::string dir = ZT_CONFIGS_DIR;
  for (int s = 0; s <= 3; ++s)
    EXPECT_EQ(load_config(dir + "/stage" + std::to_string(s) + ".json", readme_flags()).config.zero_optimization.stage.value, s);
  EXPECT_EQ(load_config(dir + "/offload_cpu.json", readme_flags()).config.zero_optimization.offload_optimizer.device.value, "cpu");
  const auto nv = load_config(dir + "/offload_nvme.json", readme_flags()).config.zero_optimization;
  EXPECT_EQ(nv.offload_optimizer.device.value, "nvme");
  EXPECT_EQ(nv.offload_param.device.value, "nvme");
  EXPECT_TRUE(load_config(dir + "/fp16.json", readme_flags()).config.fp16.enabled.value);
  EXPECT_TRUE(load_config(dir + "/bf16.json", readme_flags()).config.bf16.enabled.value);
}

// Without the flags every "auto" takes the HF Trainer's default and a warning names the flag; the
// configs with a warmup scheduler are then refused for DeepSpeed's reason (warmup 0), the others run.
TEST(ShippedConfigs, WithoutFlagsTheyNameTheFlag) {
  for (const auto& path : shipped()) {
    LoadOptions o;
    o.model_hidden = 128;
    const auto r = load_config(path, o);
    EXPECT_NE(test::find(r, "train_micro_batch_size_per_gpu", "--micro-batch", Severity::Warning), nullptr)
        << path << "\n" << test::dump(r);
    if (r.config.scheduler.present) {
      EXPECT_NE(test::find(r, "scheduler.params.warmup_num_steps", "--warmup-steps"), nullptr) << path << "\n" << test::dump(r);
      EXPECT_EQ(r.diagnostics.error_count(), 1u) << path << "\n" << test::dump(r);
    } else {
      EXPECT_TRUE(r.valid()) << path << "\n" << test::dump(r);
    }
  }
}

}  // namespace
}  // namespace zt
