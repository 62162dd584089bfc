// Parsing: strict types, duplicate keys, aliases and deprecated spellings, unknown keys with
// suggestions, unreadable files and bad JSON with line and column.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "tests/config/config_test_util.h"

namespace zt {
namespace {

using test::find;
using test::load;

const std::string kBatch = R"("train_micro_batch_size_per_gpu": 2, )";

struct TypeCase {
  const char* name;
  const char* body;  // after the batch key
  const char* path;
  const char* text;
};

const TypeCase kTypeCases[] = {
    {"int_fraction", R"("steps_per_print": 10.5)", "steps_per_print", "must be an integer or null, got a floating-point number (not"},
    {"int_string", R"("steps_per_print": "10")", "steps_per_print", "got a string"},
    {"int_bool", R"("steps_per_print": true)", "steps_per_print", "got a boolean"},
    {"int_too_large", R"("steps_per_print": 18446744073709551615)", "steps_per_print", "too large"},
    {"stage_fraction", R"("zero_optimization": {"stage": 2.5})", "zero_optimization.stage", "not a whole number"},
    {"stage_string", R"("zero_optimization": {"stage": "2"})", "zero_optimization.stage", "got a string"},
    {"count_fraction", R"("zero_optimization": {"reduce_bucket_size": 1.5})", "zero_optimization.reduce_bucket_size", "not a whole number"},
    {"count_string", R"("zero_optimization": {"reduce_bucket_size": "5e8"})", "zero_optimization.reduce_bucket_size", "got a string"},
    {"number_string", R"("gradient_clipping": "1.0")", "gradient_clipping", "must be a number, got a string"},
    {"number_bool", R"("gradient_clipping": false)", "gradient_clipping", "got a boolean"},
    {"bool_int", R"("wall_clock_breakdown": 1)", "wall_clock_breakdown", "must be true or false, got an integer"},
    {"bool_string", R"("fp16": {"enabled": "true"})", "fp16.enabled", "got a string"},
    {"string_int", R"("zero_optimization": {"offload_optimizer": {"device": 1}})", "zero_optimization.offload_optimizer.device", "must be a string"},
    {"choice_bad", R"("zero_optimization": {"offload_optimizer": {"device": "gpu"}})", "zero_optimization.offload_optimizer.device", "not one of the accepted values"},
    {"choice_typo", R"("communication_data_type": "fp166")", "communication_data_type", "did you mean \"fp16\""},
    {"betas_scalar", R"("optimizer": {"type": "Adam", "params": {"betas": 0.9}})", "optimizer.params.betas", "a list of two numbers"},
    {"betas_three", R"("optimizer": {"type": "Adam", "params": {"betas": [0.9, 0.99, 0.999]}})", "optimizer.params.betas", "a list of two numbers"},
    {"nullable_float", R"("activation_checkpointing": {"number_checkpoints": 2.5})", "activation_checkpointing.number_checkpoints", "an integer or null"},
    {"string_list_mixed", R"("comms_logger": {"prof_ops": ["all_reduce", 3]})", "comms_logger.prof_ops", "a list of strings"},
    {"block_not_object", R"("fp16": true)", "fp16", "must be a block"},
    {"block_list", R"("zero_optimization": [2])", "zero_optimization", "must be a block"},
    {"auto_in_a_dict_block", R"("aio": {"queue_depth": "auto"})", "aio.queue_depth", "\"auto\" is not filled"},
    {"auto_in_profiler", R"("flops_profiler": {"profile_step": "auto"})", "flops_profiler.profile_step", "is not filled"},
    {"ds_key_wrong_type", R"("zero_force_ds_cpu_optimizer": "yes")", "zero_force_ds_cpu_optimizer", "has the wrong type"},
};

TEST(Parse, EveryTypeError) {
  for (const auto& c : kTypeCases) {
    SCOPED_TRACE(c.name);
    const auto r = load("{" + kBatch + c.body + "}");
    EXPECT_FALSE(r.valid());
    const Diagnostic* d = find(r, c.path, c.text);
    ASSERT_NE(d, nullptr) << test::dump(r);
    EXPECT_FALSE(d->fix.empty());
  }
}

// Integral floats for integer keys (DeepSpeed reads them): 32.0 and 1e5 are whole numbers, and the
// echo says how they were written; 1.5, true and "32" stay errors.
TEST(Parse, IntegralFloatIsReadWithANote) {
  const auto r = load(R"({"train_batch_size": 32.0, "train_micro_batch_size_per_gpu": 4, "steps_per_print": 1e5,
                          "zero_optimization": {"stage": 2.0}})");
  ASSERT_TRUE(r.valid()) << test::dump(r);
  EXPECT_EQ(r.config.train_batch_size.value, 32);
  EXPECT_EQ(r.config.train_batch_size.source.describe(), "file (read 32.0 as 32)");
  EXPECT_EQ(r.config.steps_per_print.value, std::optional<int64_t>(100000));
  EXPECT_EQ(r.config.steps_per_print.source.describe(), "file (read 100000.0 as 100000)");
  EXPECT_EQ(r.config.zero_optimization.stage.value, 2);
  for (const char* bad : {R"("steps_per_print": 1.5)", R"("steps_per_print": true)", R"("steps_per_print": "32")"}) {
    const auto b = load(std::string("{\"train_micro_batch_size_per_gpu\": 4, ") + bad + "}");
    EXPECT_NE(find(b, "steps_per_print", "must be an integer or null"), nullptr) << bad << "\n" << test::dump(b);
  }
}

TEST(Parse, CountTakesExponentForm) {
  const auto r = load("{" + kBatch + R"("zero_optimization": {"stage": 2, "reduce_bucket_size": 5e8, "allgather_bucket_size": 200000000}})");
  ASSERT_TRUE(r.valid()) << test::dump(r);
  EXPECT_EQ(r.config.zero_optimization.reduce_bucket_size.value, 500000000);
  EXPECT_EQ(r.config.zero_optimization.allgather_bucket_size.value, 200000000);
}

TEST(Parse, DuplicateKeysAtEveryDepth) {
  const auto r = load(R"({"train_micro_batch_size_per_gpu": 2, "train_micro_batch_size_per_gpu": 4,
                          "zero_optimization": {"stage": 1, "offload_optimizer": {"device": "cpu", "device": "none"}, "stage": 2}})");
  EXPECT_FALSE(r.valid());
  EXPECT_NE(find(r, "train_micro_batch_size_per_gpu", "duplicate key"), nullptr) << test::dump(r);
  EXPECT_NE(find(r, "zero_optimization.stage", "duplicate key"), nullptr) << test::dump(r);
  EXPECT_NE(find(r, "zero_optimization.offload_optimizer.device", "duplicate key"), nullptr) << test::dump(r);
  EXPECT_EQ(r.diagnostics.error_count(), 3u) << test::dump(r);
}

TEST(Parse, DuplicateInsideAList) {
  const auto r = load(R"({"train_micro_batch_size_per_gpu": 2, "comms_logger": {"prof_ops": ["a"]}, "x": [{"k": 1, "k": 2}]})");
  EXPECT_NE(find(r, "x[0].k", "duplicate key"), nullptr) << test::dump(r);
}

TEST(Parse, Bfloat16Alias) {
  auto r = load("{" + kBatch + R"("bfloat16": {"enabled": true}})");
  ASSERT_TRUE(r.valid()) << test::dump(r);
  EXPECT_TRUE(r.config.bf16.enabled.value);
  EXPECT_EQ(r.config.bf16.spelling, "bfloat16");
  r = load("{" + kBatch + R"("bf16": {"enabled": true}})");
  ASSERT_TRUE(r.valid());
  EXPECT_TRUE(r.config.bf16.enabled.value);
  r = load("{" + kBatch + R"("bf16": {"enabled": true}, "bfloat16": {"enabled": true}})");
  EXPECT_NE(find(r, "bfloat16", "alias"), nullptr) << test::dump(r);
  r = load("{" + kBatch + R"("fp16": {"enabled": true}, "bfloat16": {"enabled": true}})");
  EXPECT_NE(find(r, "fp16.enabled", "bfloat16 are both enabled"), nullptr) << test::dump(r);
}

TEST(Parse, DeprecatedCpuOffloadMapsWithWarning) {
  const auto r = load("{" + kBatch + R"("zero_optimization": {"stage": 2, "cpu_offload": true, "cpu_offload_use_pin_memory": false}})");
  ASSERT_TRUE(r.valid()) << test::dump(r);
  const auto& oo = r.config.zero_optimization.offload_optimizer;
  EXPECT_EQ(oo.device.value, "cpu");
  EXPECT_EQ(oo.device.source.kind, SourceKind::Deprecated);
  EXPECT_EQ(oo.device.source.describe(), "deprecated <- zero_optimization.cpu_offload");
  // DeepSpeed's deprecated cpu_offload_use_pin_memory sets nothing: pin_memory keeps its default.
  EXPECT_TRUE(oo.pin_memory.value);
  EXPECT_NE(find(r, "zero_optimization.cpu_offload", "deprecated", Severity::Warning), nullptr) << test::dump(r);
  EXPECT_NE(find(r, "zero_optimization.cpu_offload_use_pin_memory", "deprecated", Severity::Warning), nullptr);
}

TEST(Parse, DeprecatedCpuOffloadParam) {
  const auto r = load("{" + kBatch + R"("zero_optimization": {"stage": 3, "cpu_offload_param": true}})");
  ASSERT_TRUE(r.valid()) << test::dump(r);
  EXPECT_EQ(r.config.zero_optimization.offload_param.device.value, "cpu");
  EXPECT_NE(find(r, "zero_optimization.cpu_offload_param", "deprecated", Severity::Warning), nullptr);
}

TEST(Parse, OldAndNewSpellingIsAnError) {
  auto r = load("{" + kBatch + R"("zero_optimization": {"stage": 2, "cpu_offload": true, "offload_optimizer": {"device": "cpu"}}})");
  EXPECT_NE(find(r, "zero_optimization.cpu_offload", "both given"), nullptr) << test::dump(r);
  r = load("{" + kBatch + R"("zero_optimization": {"stage": 3, "cpu_offload_param": true, "offload_param": {"device": "cpu"}}})");
  EXPECT_NE(find(r, "zero_optimization.cpu_offload_param", "both given"), nullptr) << test::dump(r);
  r = load("{" + kBatch + R"("zero_optimization": {"stage": 3, "stage3_gather_fp16_weights_on_model_save": true,
                                                    "stage3_gather_16bit_weights_on_model_save": true}})");
  EXPECT_NE(find(r, "zero_optimization.stage3_gather_fp16_weights_on_model_save", "old spelling and the new spelling"), nullptr)
      << test::dump(r);
}

TEST(Parse, DeprecatedGatherFp16) {
  const auto r = load("{" + kBatch + R"("zero_optimization": {"stage": 3, "stage3_gather_fp16_weights_on_model_save": true}})");
  ASSERT_TRUE(r.valid()) << test::dump(r);
  EXPECT_TRUE(r.config.zero_optimization.gather_16bit_weights_on_model_save.value);
  EXPECT_NE(find(r, "zero_optimization.stage3_gather_fp16_weights_on_model_save", "stage3_gather_16bit_weights_on_model_save",
                 Severity::Warning),
            nullptr);
}

TEST(Parse, Stage3PrefixAndBareName) {
  auto r = load("{" + kBatch + R"("zero_optimization": {"stage": 3, "max_live_parameters": 300, "prefetch_bucket_size": 5e6}})");
  ASSERT_TRUE(r.valid()) << test::dump(r);
  EXPECT_EQ(r.config.zero_optimization.max_live_parameters.value, 300);
  EXPECT_EQ(r.config.zero_optimization.prefetch_bucket_size.value, 5000000);
  r = load("{" + kBatch + R"("zero_optimization": {"stage": 3, "max_live_parameters": 300, "stage3_max_live_parameters": 300}})");
  EXPECT_NE(find(r, "zero_optimization.stage3_max_live_parameters", "are the same setting"), nullptr) << test::dump(r);
}

TEST(Parse, UnknownKeysSuggestAndList) {
  const auto r = load("{" + kBatch + R"("zero_optimizaton": {"stage": 2}, "fp16": {"enabeld": true}, "stage": 3})");
  const Diagnostic* d = find(r, "zero_optimizaton", "did you mean \"zero_optimization\"");
  ASSERT_NE(d, nullptr) << test::dump(r);
  EXPECT_NE(d->fix.find("valid keys here: activation_checkpointing, aio,"), std::string::npos) << d->fix;
  d = find(r, "fp16.enabeld", "did you mean \"enabled\"");
  ASSERT_NE(d, nullptr) << test::dump(r);
  EXPECT_NE(d->fix.find("auto_cast, consecutive_hysteresis, enabled"), std::string::npos) << d->fix;
  EXPECT_NE(find(r, "stage", "it is a key of zero_optimization.stage"), nullptr) << test::dump(r);
}

TEST(Parse, AllowUnknownKeysWarns) {
  LoadOptions o;
  o.allow_unknown_keys = true;
  const auto r = load("{" + kBatch + R"("my_logger": {"enabled": true}, "zero_optimization": {"stagee": 1}})", o);
  EXPECT_TRUE(r.valid()) << test::dump(r);
  EXPECT_NE(find(r, "my_logger", "unknown key", Severity::Warning), nullptr);
  EXPECT_NE(find(r, "zero_optimization.stagee", "did you mean \"stage\"", Severity::Warning), nullptr);
}

TEST(Parse, OptimizerTypes) {
  auto r = load("{" + kBatch + R"("optimizer": {"type": "adamw", "params": {"lr": 0.001}}})");
  ASSERT_TRUE(r.valid()) << test::dump(r);
  EXPECT_EQ(r.config.optimizer.type.value, "AdamW");
  // DeepSpeed's 1-bit Adam under any spelling of its name, with its keys and defaults.
  for (const char* name : {"OneBitAdam", "OnebitAdam", "onebitadam"}) {
    r = load("{" + kBatch + R"("optimizer": {"type": ")" + name +
             R"(", "params": {"lr": 0.001, "freeze_step": 400, "cuda_aware": false, "comm_backend_name": "mpi"}}})");
    EXPECT_EQ(r.diagnostics.error_count(), 0u) << name << "\n" << test::dump(r);
    EXPECT_EQ(r.config.optimizer.type.value, "OneBitAdam");
    EXPECT_EQ(r.config.optimizer.freeze_step.value, 400);
    EXPECT_EQ(r.config.optimizer.comm_backend_name.value, "mpi");
  }
  r = load("{" + kBatch + R"("optimizer": {"type": "OneBitAdam"}})");
  EXPECT_EQ(r.config.optimizer.freeze_step.value, 100000);
  EXPECT_EQ(r.config.optimizer.comm_backend_name.value, "nccl");
  EXPECT_FALSE(r.config.optimizer.cuda_aware.value);
  // 0/1 Adam likewise, with DeepSpeed's defaults (local_step_scaler 32678 as its code has it).
  for (const char* name : {"ZeroOneAdam", "zerooneadam"}) {
    r = load("{" + kBatch + R"("optimizer": {"type": ")" + name +
             R"(", "params": {"lr": 0.001, "var_freeze_step": 400, "local_step_clipper": 8, "comm_backend_name": "mpi"}}})");
    EXPECT_EQ(r.diagnostics.error_count(), 0u) << name << "\n" << test::dump(r);
    EXPECT_EQ(r.config.optimizer.type.value, "ZeroOneAdam");
    EXPECT_EQ(r.config.optimizer.var_freeze_step.value, 400);
    EXPECT_EQ(r.config.optimizer.var_update_scaler.value, 16);
    EXPECT_EQ(r.config.optimizer.local_step_scaler.value, 32678);
    EXPECT_EQ(r.config.optimizer.local_step_clipper.value, 8);
  }
  r = load("{" + kBatch + R"("optimizer": {"type": "ZeroOneAdam", "params": {"freeze_step": 4}}})");
  EXPECT_NE(find(r, "optimizer.params.freeze_step", "unknown key"), nullptr) << "1-bit Adam's key\n" << test::dump(r);
  // 1-bit LAMB likewise, with the LAMB coefficients and its factor bounds.
  for (const char* name : {"OneBitLamb", "onebitlamb", "OnebitLamb"}) {
    r = load("{" + kBatch + R"("optimizer": {"type": ")" + name +
             R"(", "params": {"lr": 0.001, "freeze_step": 400, "max_coeff": 0.3, "factor_threshold": 0.2}}})");
    EXPECT_EQ(r.diagnostics.error_count(), 0u) << name << "\n" << test::dump(r);
    EXPECT_EQ(r.config.optimizer.type.value, "OneBitLamb");
    EXPECT_EQ(r.config.optimizer.freeze_step.value, 400);
    EXPECT_EQ(r.config.optimizer.max_coeff.value, 0.3);
    EXPECT_EQ(r.config.optimizer.min_coeff.value, 0.01);
    EXPECT_EQ(r.config.optimizer.coeff_beta.value, 0.9);
    EXPECT_EQ(r.config.optimizer.factor_max.value, 4.0);
    EXPECT_EQ(r.config.optimizer.factor_min.value, 0.5);
    EXPECT_EQ(r.config.optimizer.factor_threshold.value, 0.2);
  }
  r = load("{" + kBatch + R"("optimizer": {"type": "Lion", "params": {"lr": 0.001}}})");
  const Diagnostic* d = find(r, "optimizer.type", "DeepSpeed has it; zerotrain does not implement it");
  ASSERT_NE(d, nullptr) << test::dump(r);
  EXPECT_EQ(d->fix, "use one of: Adam, AdamW, SGD, Lamb, OneBitAdam, ZeroOneAdam, OneBitLamb");
  EXPECT_EQ(r.diagnostics.error_count(), 1u) << "params of an unsupported type are not walked\n" << test::dump(r);
  r = load("{" + kBatch + R"("optimizer": {"params": {"lr": 0.001}}})");
  EXPECT_NE(find(r, "optimizer.type", "has no \"type\""), nullptr) << test::dump(r);
  r = load("{" + kBatch + R"("optimizer": {"type": "SGD", "params": {"lr": 0.1, "momentum": 0.9, "betas": [0.9, 0.99]}}})");
  EXPECT_NE(find(r, "optimizer.params.betas", "unknown key"), nullptr) << test::dump(r);
}

TEST(Parse, SchedulerTypes) {
  auto r = load("{" + kBatch + R"("scheduler": {"type": "LRRangeTest", "params": {}}})");
  const Diagnostic* d = find(r, "scheduler.type", "unsupported scheduler type");
  ASSERT_NE(d, nullptr) << test::dump(r);
  EXPECT_EQ(d->fix, "use one of: WarmupLR, WarmupDecayLR, WarmupCosineLR, OneCycle");
  // OneCycle: its own keys, cycle_min_lr and cycle_max_lr required, warmup keys unknown to it.
  r = load("{" + kBatch + R"("scheduler": {"type": "OneCycle", "params": {"cycle_max_lr": 0.01,
      "cycle_first_step_size": 10, "cycle_momentum": false, "warmup_num_steps": 5}}})");
  EXPECT_NE(find(r, "scheduler.params.cycle_min_lr", "OneCycle needs cycle_min_lr"), nullptr) << test::dump(r);
  EXPECT_NE(find(r, "scheduler.params.warmup_num_steps", "unknown key"), nullptr) << test::dump(r);
  r = load("{" + kBatch + R"("scheduler": {"type": "OneCycle", "params": {"cycle_min_lr": 0.001, "cycle_max_lr": 0.01,
      "cycle_first_step_size": 10, "decay_step_size": 5, "cycle_momentum": false}}})");
  EXPECT_TRUE(r.valid()) << test::dump(r);
  EXPECT_EQ(r.config.scheduler.cycle_max_lr.value, 0.01);
  EXPECT_FALSE(r.config.scheduler.cycle_momentum.value);
  r = load("{" + kBatch + R"("scheduler": {"type": "WarmupLr", "params": {}}})");
  EXPECT_NE(find(r, "scheduler.type", "did you mean \"WarmupLR\""), nullptr) << test::dump(r);
}

TEST(Parse, MissingFileAndDirectory) {
  auto r = load_config("/nonexistent/ds_config.json", {});
  EXPECT_NE(find(r, "/nonexistent/ds_config.json", "cannot open"), nullptr) << test::dump(r);
  r = load_config("/tmp", {});
  EXPECT_NE(find(r, "/tmp", "is a directory"), nullptr) << test::dump(r);
}

TEST(Parse, BadJsonNamesLineAndColumn) {
  const auto r = load("{\n  \"train_batch_size\": 32\n  \"steps_per_print\": 1\n}");
  ASSERT_EQ(r.diagnostics.error_count(), 1u) << test::dump(r);
  const Diagnostic& d = r.diagnostics.all()[0];
  EXPECT_EQ(d.path.rfind("test.json:3:", 0), 0u) << d.path;
  EXPECT_NE(d.message.find("not valid JSON"), std::string::npos);
}

TEST(Parse, TopLevelMustBeObject) {
  auto r = load("[1, 2]");
  EXPECT_NE(find(r, "test.json", "must be a JSON object"), nullptr) << test::dump(r);
  r = load("");
  EXPECT_FALSE(r.valid());
}

TEST(Parse, NullBlockIsAbsent) {
  const auto r = load("{" + kBatch + R"("zero_optimization": {"stage": 2, "offload_optimizer": null}})");
  ASSERT_TRUE(r.valid()) << test::dump(r);
  EXPECT_EQ(r.config.zero_optimization.offload_optimizer.device.value, "none");
}

TEST(Parse, ReadsFromDisk) {
  const std::string path = ::testing::TempDir() + "zt_parse_test.json";
  std::ofstream(path) << R"({"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 1}})";
  const auto r = load_config(path, {});
  EXPECT_TRUE(r.valid()) << test::dump(r);
  EXPECT_EQ(r.config.zero_optimization.stage.value, 1);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace zt
