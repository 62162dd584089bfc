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

// Without flags each "auto" takes the HF Trainer's default for that argument (the TrainingArguments
// defaults of transformers), with a warning naming the flag and the echo saying so. A warmup of 0
// (the Trainer's default) is then refused with DeepSpeed's reason, and the hidden-size "auto"s need
// a model.
TEST(Auto, TrainerDefaultsWhenFlagsAreMissing) {
  LoadOptions o;  // no flags, no model
  const auto r = load(kAllAuto, o);
  const Config& c = r.config;
  const std::pair<const char*, const char*> defaulted[] = {
      {"train_micro_batch_size_per_gpu", "--micro-batch"}, {"gradient_accumulation_steps", "--grad-accum"},
      {"gradient_clipping", "--max-grad-norm"},            {"optimizer.params.lr", "--lr"},
      {"optimizer.params.weight_decay", "--weight-decay"}, {"optimizer.params.betas", "--adam-beta1 and --adam-beta2"},
      {"optimizer.params.eps", "--adam-eps"},              {"scheduler.params.warmup_max_lr", "--lr"}};
  for (auto [path, flag] : defaulted) {
    const Diagnostic* d = find(r, path, flag, Severity::Warning);
    ASSERT_NE(d, nullptr) << path << "\n" << test::dump(r);
    EXPECT_NE(d->message.find("HF Trainer's default"), std::string::npos) << d->message;
  }
  EXPECT_EQ(c.train_micro_batch_size_per_gpu.value, 8);
  EXPECT_EQ(c.gradient_accumulation_steps.value, 1);
  EXPECT_DOUBLE_EQ(c.gradient_clipping.value, 1.0);
  EXPECT_DOUBLE_EQ(c.optimizer.lr.value, 5e-5);
  EXPECT_DOUBLE_EQ(c.optimizer.weight_decay.value, 0.0);
  EXPECT_EQ(c.optimizer.betas.value, (std::vector<double>{0.9, 0.999}));
  EXPECT_DOUBLE_EQ(c.optimizer.eps.value, 1e-8);
  EXPECT_EQ(c.optimizer.lr.source.describe(), "auto <- the HF Trainer's default (--lr not given)");
  EXPECT_EQ(c.scheduler.total_num_steps.value, kDefaultRunSteps);
  EXPECT_NE(c.scheduler.total_num_steps.source.describe().find("--steps not given"), std::string::npos);
  // The errors: warmup 0 and the three hidden-size keys, nothing else.
  const Diagnostic* w = find(r, "scheduler.params.warmup_num_steps", "needs at least one warmup step");
  ASSERT_NE(w, nullptr) << test::dump(r);
  EXPECT_NE(w->message.find("HF Trainer's default"), std::string::npos);
  EXPECT_NE(w->fix.find("--warmup-ratio"), std::string::npos);
  for (const char* path : {"zero_optimization.reduce_bucket_size", "zero_optimization.stage3_prefetch_bucket_size",
                           "zero_optimization.stage3_param_persistence_threshold"})
    EXPECT_NE(find(r, path, "--model NAME or --hidden-size"), nullptr) << path << "\n" << test::dump(r);
  EXPECT_EQ(r.diagnostics.error_count(), 4u) << test::dump(r);
}

TEST(Auto, ParamsWithoutHiddenSizeSaysSo) {
  LoadOptions o;
  o.size_without_shape = true;
  const auto r = load(R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3, "reduce_bucket_size": "auto"}})", o);
  const Diagnostic* d = find(r, "zero_optimization.reduce_bucket_size", "--params gives the parameter count");
  ASSERT_NE(d, nullptr) << test::dump(r);
  EXPECT_EQ(d->message.find("no model was named"), std::string::npos);
  EXPECT_NE(d->fix.find("--hidden-size"), std::string::npos);
}

TEST(Auto, OneBetaMissing) {
  LoadOptions o;
  o.flags.adam_beta1 = 0.8;
  const auto r = load(R"({"train_micro_batch_size_per_gpu": 1, "optimizer": {"type": "Adam", "params": {"betas": "auto"}}})", o);
  ASSERT_TRUE(r.valid()) << test::dump(r);
  EXPECT_EQ(r.config.optimizer.betas.value, (std::vector<double>{0.8, 0.999}));
  EXPECT_NE(find(r, "optimizer.params.betas", "--adam-beta2 was not given", Severity::Warning), nullptr) << test::dump(r);
}

// The HF Trainer's --fp16 / --bf16: "auto" follows the flag, false without it (source says so).
TEST(Auto, PrecisionFlags) {
  const char* cfg = R"({"train_micro_batch_size_per_gpu": 1, "fp16": {"enabled": "auto"}, "bf16": {"enabled": "auto"},
                        "zero_optimization": {"stage": 3, "stage3_gather_16bit_weights_on_model_save": "auto"}})";
  LoadOptions o;
  auto r = load(cfg, o);
  ASSERT_TRUE(r.valid()) << test::dump(r);
  EXPECT_FALSE(r.config.fp16.enabled.value);
  EXPECT_FALSE(r.config.bf16.enabled.value);
  EXPECT_EQ(r.config.bf16.enabled.source.describe(), "auto <- false: --bf16 not given (the HF Trainer's default)");
  EXPECT_FALSE(r.config.zero_optimization.gather_16bit_weights_on_model_save.value);
  EXPECT_NE(find(r, "zero_optimization.stage3_gather_16bit_weights_on_model_save", "zero3_save_16bit_model", Severity::Warning),
            nullptr) << test::dump(r);
  o.flags.bf16 = true;
  r = load(cfg, o);
  ASSERT_TRUE(r.valid()) << test::dump(r);
  EXPECT_TRUE(r.config.bf16.enabled.value);
  EXPECT_FALSE(r.config.fp16.enabled.value);
  EXPECT_EQ(r.config.bf16.enabled.source.describe(), "auto <- --bf16");
  o.flags.fp16 = true;
  r = load(cfg, o);
  EXPECT_NE(find(r, "fp16.enabled", "mutually exclusive"), nullptr) << test::dump(r);
  LoadOptions p;
  p.flags.fp16 = true;
  r = load(R"({"train_micro_batch_size_per_gpu": 1, "fp16": {"enabled": false}})", p);
  EXPECT_NE(find(r, "fp16.enabled", "set twice"), nullptr) << test::dump(r);
}

// An "auto" the HF Trainer does not fill: in DeepSpeed's pydantic blocks it is dropped (the default
// applies, with a warning); in blocks DeepSpeed reads key by key it would stay the string "auto".
TEST(Auto, UnfilledAutoFollowsHowDeepSpeedReadsTheBlock) {
  const auto r = load(R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3, "sub_group_size": "auto",
                          "overlap_comm": "auto"}, "steps_per_print": "auto"})");
  EXPECT_EQ(r.config.zero_optimization.sub_group_size.value, 1000000000);
  EXPECT_NE(find(r, "zero_optimization.sub_group_size", "DeepSpeed's default 1000000000 applies", Severity::Warning), nullptr)
      << test::dump(r);
  EXPECT_TRUE(r.config.zero_optimization.overlap_comm.value);  // dropped, then derived: stage 3
  EXPECT_NE(find(r, "steps_per_print", "is not filled"), nullptr) << test::dump(r);
  EXPECT_EQ(r.diagnostics.error_count(), 1u) << test::dump(r);
}

TEST(Auto, WarmupRatioAsTheTrainerComputesIt) {
  LoadOptions o;
  o.flags.warmup_ratio = 0.03;
  o.flags.steps = 1000;
  const auto r = load(R"({"train_micro_batch_size_per_gpu": 1, "scheduler": {"type": "WarmupDecayLR",
                          "params": {"warmup_num_steps": "auto", "total_num_steps": "auto"}}})", o);
  ASSERT_TRUE(r.valid()) << test::dump(r);
  EXPECT_EQ(r.config.scheduler.warmup_num_steps.value, 30);  // ceil(0.03 * 1000)
  EXPECT_EQ(r.config.scheduler.total_num_steps.value, 1000);
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
  // The same value twice is no conflict (the HF Trainer accepts it too).
  const auto same = load(R"({"train_micro_batch_size_per_gpu": 4, "gradient_clipping": 1.0})", o);
  EXPECT_EQ(find(same, "train_micro_batch_size_per_gpu", "set twice"), nullptr) << test::dump(same);
  EXPECT_EQ(find(same, "gradient_clipping", "set twice"), nullptr) << test::dump(same);
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
  EXPECT_NE(find(r, "steps_per_print", "is not filled"), nullptr) << test::dump(r);
  EXPECT_NE(find(r, "aio.queue_depth", "DeepSpeed would use the string"), nullptr) << test::dump(r);
}

}  // namespace
}  // namespace zt
