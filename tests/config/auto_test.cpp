// "auto": resolved from each flag of the HF mapping, unresolved auto names its flag, and a flag
// for a key the config sets to a number is an error naming both values.
#include <gtest/gtest.h>

#include "tests/config/config_test_util.h"

namespace zt {
namespace {

using test::find;
using test::load;

AutoFlags all_flags() {
  AutoFlags f;
  f.micro_batch = 4;
  f.grad_accum = 2;
  f.lr = 3e-4;
  f.weight_decay = 0.1;
  f.adam_beta1 = 0.9;
  f.adam_beta2 = 0.95;
  f.adam_eps = 1e-8;
  f.max_grad_norm = 1.0;
  f.warmup_steps = 10;
  f.steps = 100;
  return f;
}

const char* kAllAuto = R"({
  "train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
  "gradient_clipping": "auto",
  "optimizer": {"type": "AdamW", "params": {"lr": "auto", "betas": "auto", "eps": "auto", "weight_decay": "auto"}},
  "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": "auto", "warmup_max_lr": "auto",
                "warmup_num_steps": "auto", "total_num_steps": "auto"}},
  "zero_optimization": {"stage": 3, "reduce_bucket_size": "auto", "stage3_prefetch_bucket_size": "auto",
                        "stage3_param_persistence_threshold": "auto"}})";

TEST(Auto, EveryKeyResolvedFromItsFlag) {
  LoadOptions o;
  o.world_size = 2;
  o.world_source = WorldSizeSource::Flag;
  o.flags = all_flags();
  o.model_hidden = 128;
  const auto r = load(kAllAuto, o);
  ASSERT_TRUE(r.valid()) << test::dump(r);
  const Config& c = r.config;
  EXPECT_EQ(c.train_micro_batch_size_per_gpu.value, 4);
  EXPECT_EQ(c.train_micro_batch_size_per_gpu.source.describe(), "auto <- --micro-batch");
  EXPECT_EQ(c.gradient_accumulation_steps.value, 2);
  EXPECT_EQ(c.train_batch_size.value, 16);
  EXPECT_EQ(c.train_batch_size.source.kind, SourceKind::Derived);
  EXPECT_DOUBLE_EQ(c.gradient_clipping.value, 1.0);
  EXPECT_DOUBLE_EQ(c.optimizer.lr.value, 3e-4);
  EXPECT_DOUBLE_EQ(c.optimizer.weight_decay.value, 0.1);
  EXPECT_EQ(c.optimizer.betas.value, (std::vector<double>{0.9, 0.95}));
  EXPECT_DOUBLE_EQ(c.optimizer.eps.value, 1e-8);
  EXPECT_EQ(c.scheduler.warmup_num_steps.value, 10);
  EXPECT_DOUBLE_EQ(c.scheduler.warmup_max_lr.value, 3e-4);
  EXPECT_EQ(c.scheduler.warmup_max_lr.source.describe(), "auto <- --lr");
  EXPECT_DOUBLE_EQ(c.scheduler.warmup_min_lr.value, 0.0);
  EXPECT_EQ(c.scheduler.total_num_steps.value, 100);
  EXPECT_EQ(c.zero_optimization.reduce_bucket_size.value, 128 * 128);
  EXPECT_EQ(c.zero_optimization.prefetch_bucket_size.value, 14745);  // 0.9 * 128 * 128
  EXPECT_EQ(c.zero_optimization.param_persistence_threshold.value, 1280);
}

TEST(Auto, UnresolvedNamesTheFlag) {
  LoadOptions o;  // no flags, no model
  const auto r = load(kAllAuto, o);
  EXPECT_FALSE(r.valid());
  const std::pair<const char*, const char*> want[] = {
      {"train_micro_batch_size_per_gpu", "--micro-batch"}, {"gradient_accumulation_steps", "--grad-accum"},
      {"gradient_clipping", "--max-grad-norm"},            {"optimizer.params.lr", "--lr"},
      {"optimizer.params.weight_decay", "--weight-decay"}, {"optimizer.params.betas", "--adam-beta1 and --adam-beta2"},
      {"optimizer.params.eps", "--adam-eps"},              {"scheduler.params.warmup_num_steps", "--warmup-steps"},
      {"scheduler.params.warmup_max_lr", "--lr"},          {"scheduler.params.total_num_steps", "--steps"},
      {"zero_optimization.reduce_bucket_size", "--model"}, {"zero_optimization.stage3_prefetch_bucket_size", "--model"},
      {"zero_optimization.stage3_param_persistence_threshold", "--model"}};
  for (auto [path, flag] : want) {
    const Diagnostic* d = find(r, path, flag);
    ASSERT_NE(d, nullptr) << path << "\n" << test::dump(r);
    EXPECT_EQ(d->value, "\"auto\"");
  }
  // Unresolved batch keys do not also produce a batch-equation error.
  EXPECT_EQ(find(r, "train_batch_size", "Either"), nullptr) << test::dump(r);
  EXPECT_EQ(r.diagnostics.error_count(), std::size(want)) << test::dump(r);
}

TEST(Auto, OneBetaMissing) {
  LoadOptions o;
  o.flags.adam_beta1 = 0.8;
  const auto r = load(R"({"train_micro_batch_size_per_gpu": 1, "optimizer": {"type": "Adam", "params": {"betas": "auto"}}})", o);
  const Diagnostic* d = find(r, "optimizer.params.betas", "--adam-beta2 was not given");
  EXPECT_NE(d, nullptr) << test::dump(r);
}

TEST(Auto, FlagVersusNumberIsAnError) {
  LoadOptions o;
  o.flags = all_flags();
  const auto r = load(R"({"train_micro_batch_size_per_gpu": 8, "gradient_clipping": 0.5,
      "optimizer": {"type": "AdamW", "params": {"lr": 0.001, "betas": [0.9, 0.999]}}})", o);
  EXPECT_FALSE(r.valid());
  const Diagnostic* d = find(r, "train_micro_batch_size_per_gpu", "the config says 8 and --micro-batch says 4");
  ASSERT_NE(d, nullptr) << test::dump(r);
  EXPECT_NE(d->fix.find("\"auto\""), std::string::npos);
  EXPECT_NE(find(r, "gradient_clipping", "the config says 0.5 and --max-grad-norm says 1"), nullptr) << test::dump(r);
  EXPECT_NE(find(r, "optimizer.params.lr", "the config says 0.001 and --lr says 0.0003"), nullptr) << test::dump(r);
  EXPECT_NE(find(r, "optimizer.params.betas", "[0.9, 0.999] and --adam-beta1 0.9 and --adam-beta2 0.95"), nullptr) << test::dump(r);
}

TEST(Auto, FlagFillsAnAbsentKey) {
  LoadOptions o;
  o.flags.micro_batch = 3;
  o.flags.lr = 0.01;
  const auto r = load(R"({"optimizer": {"type": "SGD", "params": {"momentum": 0.9}}})", o);
  ASSERT_TRUE(r.valid()) << test::dump(r);
  EXPECT_EQ(r.config.train_micro_batch_size_per_gpu.value, 3);
  EXPECT_EQ(r.config.train_micro_batch_size_per_gpu.source.describe(), "flag --micro-batch");
  EXPECT_DOUBLE_EQ(r.config.optimizer.lr.value, 0.01);
}

TEST(Auto, WarmupFlagWithoutSchedulerWarns) {
  LoadOptions o;
  o.flags.micro_batch = 1;
  o.flags.warmup_steps = 5;
  const auto r = load("{}", o);
  EXPECT_TRUE(r.valid()) << test::dump(r);
  EXPECT_NE(find(r, "--warmup-steps", "no scheduler block", Severity::Warning), nullptr) << test::dump(r);
}

TEST(Auto, AutoRejectedWhereNothingResolvesIt) {
  const auto r = load(R"({"train_micro_batch_size_per_gpu": 1, "steps_per_print": "auto", "aio": {"queue_depth": "auto"}})");
  EXPECT_NE(find(r, "steps_per_print", "cannot be resolved"), nullptr) << test::dump(r);
  EXPECT_NE(find(r, "aio.queue_depth", "cannot be resolved"), nullptr) << test::dump(r);
}

}  // namespace
}  // namespace zt
