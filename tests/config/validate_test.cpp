// The invalid-combination table of configs/README.md: each combination gives its own message with
// the path, the value and a fix; the warning rows warn without failing.
#include <gtest/gtest.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>

#include "tests/common/ci_skip.h"
#include "tests/config/config_test_util.h"

namespace zt {
namespace {

using test::find;
using test::load;

struct ComboCase {
  const char* name;
  const char* body;
  const char* path;
  const char* value;
  const char* text;
  bool warning;
};

const ComboCase kCombos[] = {
    {"fp16_and_bf16", R"("fp16": {"enabled": true}, "bf16": {"enabled": true})", "fp16.enabled", "true", "mutually exclusive", false},
    {"offload_param_stage2", R"("zero_optimization": {"stage": 2, "offload_param": {"device": "cpu"}})",
     "zero_optimization.offload_param.device", "\"cpu\"", "parameter offload needs ZeRO stage 3", false},
    {"offload_param_stage1_nvme", R"("zero_optimization": {"stage": 1, "offload_param": {"device": "nvme", "nvme_path": "/tmp"}})",
     "zero_optimization.offload_param.device", "\"nvme\"", "parameter offload needs ZeRO stage 3", false},
    {"offload_optimizer_stage0", R"("zero_optimization": {"stage": 0, "offload_optimizer": {"device": "cpu"}})",
     "zero_optimization.offload_optimizer.device", "\"cpu\"", "needs ZeRO stage 1, 2 or 3", false},
    {"ratio_stage2", R"("zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu", "ratio": 0.5}})",
     "zero_optimization.offload_optimizer.ratio", "0.5", "works only with ZeRO stage 3", false},
    {"ratio_with_nvme", R"("zero_optimization": {"stage": 3, "offload_optimizer": {"device": "nvme", "nvme_path": "/tmp", "ratio": 0.5}})",
     "zero_optimization.offload_optimizer.ratio", "0.5", "works with offload_optimizer.device \"cpu\" only", false},
    {"ratio_out_of_range", R"("zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "ratio": 1.5}})",
     "zero_optimization.offload_optimizer.ratio", "1.5", "must be in [0, 1]", false},
    {"nvme_without_path", R"("zero_optimization": {"stage": 3, "offload_optimizer": {"device": "nvme"}})",
     "zero_optimization.offload_optimizer.nvme_path", "", "needs nvme_path", false},
    {"nvme_path_missing", R"("zero_optimization": {"stage": 3, "offload_param": {"device": "nvme", "nvme_path": "/nonexistent/zt_nvme"}})",
     "zero_optimization.offload_param.nvme_path", "\"/nonexistent/zt_nvme\"", "does not exist", false},
    {"nvme_path_is_file", R"("zero_optimization": {"stage": 3, "offload_optimizer": {"device": "nvme", "nvme_path": "/proc/meminfo"}})",
     "zero_optimization.offload_optimizer.nvme_path", "\"/proc/meminfo\"", "not a directory", false},
    {"stage_4", R"("zero_optimization": {"stage": 4})", "zero_optimization.stage", "4", "must be 0, 1, 2 or 3", false},
    {"stage_negative", R"("zero_optimization": {"stage": -1})", "zero_optimization.stage", "-1", "must be 0, 1, 2 or 3", false},
    {"max_grad_norm_in_optimizer", R"("optimizer": {"type": "AdamW", "params": {"max_grad_norm": 1.0}})",
     "optimizer.params.max_grad_norm", "1.0", "gradient_clipping", false},
    {"decay_without_total", R"("scheduler": {"type": "WarmupDecayLR", "params": {"warmup_num_steps": 10}})",
     "scheduler.params.total_num_steps", "", "WarmupDecayLR needs total_num_steps", false},
    {"cosine_without_total", R"("scheduler": {"type": "WarmupCosineLR", "params": {}})",
     "scheduler.params.total_num_steps", "", "WarmupCosineLR needs total_num_steps", false},
    {"loss_scale_negative", R"("fp16": {"enabled": true, "loss_scale": -1})", "fp16.loss_scale", "-1", "must be >= 0", false},
    {"loss_scale_window_zero", R"("fp16": {"enabled": true, "loss_scale_window": 0})", "fp16.loss_scale_window", "0", "at least 1", false},
    {"min_loss_scale_zero", R"("fp16": {"enabled": true, "min_loss_scale": 0})", "fp16.min_loss_scale", "0", "> 0", false},
    {"hysteresis_zero", R"("fp16": {"enabled": true, "hysteresis": 0})", "fp16.hysteresis", "0", "at least 1", false},
    {"scale_power_huge", R"("fp16": {"enabled": true, "initial_scale_power": 2000})", "fp16.initial_scale_power", "2000", "out of range", false},
    {"unsupported_optimizer", R"("optimizer": {"type": "Adagrad"})", "optimizer.type", "\"Adagrad\"", "unsupported optimizer type", false},
    {"unsupported_scheduler", R"("scheduler": {"type": "LRRangeTest"})", "scheduler.type", "\"LRRangeTest\"", "unsupported scheduler type", false},
    {"betas_out_of_range", R"("optimizer": {"type": "Adam", "params": {"betas": [0.9, 1.0]}})", "optimizer.params.betas[1]", "1", "[0, 1)", false},
    {"eps_negative", R"("optimizer": {"type": "Adam", "params": {"eps": -1e-8}})", "optimizer.params.eps", "-1e-08", ">= 0", false},
    {"lr_negative", R"("optimizer": {"type": "Adam", "params": {"lr": -0.1}})", "optimizer.params.lr", "-0.1", ">= 0", false},
    {"warmup_longer_than_total", R"("scheduler": {"type": "WarmupDecayLR", "params": {"warmup_num_steps": 200, "total_num_steps": 100}})",
     "scheduler.params.warmup_num_steps", "200", "longer than total_num_steps", true},
    {"warmup_min_above_max", R"("scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 0.1, "warmup_max_lr": 0.01}})",
     "scheduler.params.warmup_min_lr", "0.1", "greater than warmup_max_lr", false},
    {"bucket_negative", R"("zero_optimization": {"stage": 2, "reduce_bucket_size": -1})", "zero_optimization.reduce_bucket_size", "-1", "at least 0", false},
    {"nvme_buffer_count_zero", R"("zero_optimization": {"stage": 3, "offload_optimizer": {"device": "nvme", "nvme_path": "/tmp", "buffer_count": 0}})",
     "zero_optimization.offload_optimizer.buffer_count", "0", "cannot run with none", false},
    {"nvme_param_buffer_size_zero", R"("zero_optimization": {"stage": 3, "offload_param": {"device": "nvme", "nvme_path": "/tmp", "buffer_size": 0}})",
     "zero_optimization.offload_param.buffer_size", "0", "none fits in 0", false},
    {"warmup_zero", R"("scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 0}})", "scheduler.params.warmup_num_steps", "0",
     "needs at least one warmup step", false},
    {"warmup_float", R"("scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 1000.0}})", "scheduler.params.warmup_num_steps",
     "1000.0", "raises ValueError", false},
    {"hysteresis_zero_dynamic", R"("fp16": {"enabled": true, "hysteresis": 0})", "fp16.hysteresis", "0", "never lowers the scale", false},
    {"min_loss_scale_fraction", R"("fp16": {"enabled": true, "min_loss_scale": 0.5})", "fp16.min_loss_scale", "0.5", "not a whole number", false},
    {"steps_per_print_zero", R"("steps_per_print": 0)", "steps_per_print", "0", "divides the step count", false},
    {"decay_step_negative", R"("scheduler": {"type": "OneCycle", "params": {"cycle_min_lr": 0.001, "cycle_max_lr": 0.01, "decay_step_size": -5}})",
     "scheduler.params.decay_step_size", "-5", "negative", false},
    {"nesterov_without_momentum", R"("optimizer": {"type": "SGD", "params": {"nesterov": true}})", "optimizer.params.nesterov", "true",
     "needs momentum > 0", false},
    {"bf16_extra_fp16_keys", R"("bf16": {"enabled": true, "loss_scale": 0})", "bf16.loss_scale", "0", "DeepSpeed refuses it too", false},
    {"comm_dtype_unknown", R"("communication_data_type": "bfp16")", "communication_data_type", "\"bfp16\"", "not one of the accepted values", false},
    {"aio_queue_zero", R"("aio": {"queue_depth": 0})", "aio.queue_depth", "0", "at least 1", false},
    {"hpz_below_stage3", R"("zero_optimization": {"stage": 2, "zero_hpz_partition_size": 4})",
     "zero_optimization.zero_hpz_partition_size", "4", "DeepSpeed ignores the key below stage 3", false},
    {"hpz_with_nvme_params", R"("zero_optimization": {"stage": 3, "zero_hpz_partition_size": 2, "offload_param": {"device": "nvme", "nvme_path": "/tmp"}})",
     "zero_optimization.zero_hpz_partition_size", "2", "beside parameters swapped to NVMe", false},
    {"mics_below_stage3", R"("zero_optimization": {"stage": 2, "mics_shard_size": 4})",
     "zero_optimization.mics_shard_size", "4", "MiCS shards stage 3's model states", false},
    {"mics_with_hpz", R"("zero_optimization": {"stage": 3, "mics_shard_size": 4, "zero_hpz_partition_size": 2})",
     "zero_optimization.mics_shard_size", "4", "zerotrain runs one or the other", false},
    {"mics_with_offload_optimizer", R"("zero_optimization": {"stage": 3, "mics_shard_size": 2, "offload_optimizer": {"device": "cpu"}})",
     "zero_optimization.mics_shard_size", "2", "MiCS is not built with an offloaded optimizer", false},
    {"mics_hierarchical_without_mics", R"("zero_optimization": {"stage": 3, "mics_hierarchical_params_gather": true})",
     "zero_optimization.mics_hierarchical_params_gather", "true", "MiCS is off", true},
    {"qwz_below_stage3", R"("zero_optimization": {"stage": 2, "zero_quantized_weights": true})",
     "zero_optimization.zero_quantized_weights", "true", "qwZ quantizes stage 3's parameter all-gathers", false},
    {"qwz_with_hierarchical_mics", R"("zero_optimization": {"stage": 3, "mics_shard_size": 2, "mics_hierarchical_params_gather": true, "zero_quantized_weights": true})",
     "zero_optimization.zero_quantized_weights", "true", "the two are not combined", false},
    {"qgz_below_stage3", R"("zero_optimization": {"stage": 2, "zero_quantized_gradients": true})",
     "zero_optimization.zero_quantized_gradients", "true", "qgZ quantizes stage 3's gradient reduce-scatters", false},
    {"qgz_without_reduce_scatter", R"("zero_optimization": {"stage": 3, "reduce_scatter": false, "zero_quantized_gradients": true})",
     "zero_optimization.zero_quantized_gradients", "true", "reduce_scatter is false", false},
    {"qgz_with_mics", R"("zero_optimization": {"stage": 3, "mics_shard_size": 2, "zero_quantized_gradients": true})",
     "zero_optimization.zero_quantized_gradients", "true", "qgZ's two hops are not combined with it", false},
    {"onebit_with_zero", R"("optimizer": {"type": "OneBitAdam"}, "zero_optimization": {"stage": 1})",
     "zero_optimization.stage", "1", "OneBitAdam keeps every parameter's optimizer state on every rank", false},
    {"onebit_amsgrad", R"("optimizer": {"type": "OneBitAdam", "params": {"amsgrad": true}})",
     "optimizer.params.amsgrad", "true", "OneBitAdam has no AMSGrad variant", false},
    {"zero_one_with_zero", R"("optimizer": {"type": "ZeroOneAdam"}, "zero_optimization": {"stage": 2})",
     "zero_optimization.stage", "2", "ZeroOneAdam keeps every parameter's optimizer state on every rank", false},
    {"zero_one_with_offload", R"("optimizer": {"type": "ZeroOneAdam"}, "zero_optimization": {"stage": 0, "offload_optimizer": {"device": "cpu"}})",
     "zero_optimization.offload_optimizer.device", "\"cpu\"", "no offload", false},
    {"zero_one_amsgrad", R"("optimizer": {"type": "zerooneadam", "params": {"amsgrad": true}})",
     "optimizer.params.amsgrad", "true", "ZeroOneAdam has no AMSGrad variant", false},
    {"zero_one_clipper_zero", R"("optimizer": {"type": "ZeroOneAdam", "params": {"local_step_clipper": 0}})",
     "optimizer.params.local_step_clipper", "0", "divides the step number by it", false},
    {"zero_one_scaler_zero", R"("optimizer": {"type": "ZeroOneAdam", "params": {"var_update_scaler": 0}})",
     "optimizer.params.var_update_scaler", "0", "never doubles", true},
    {"onebit_lamb_static_scale", R"("optimizer": {"type": "OneBitLamb"}, "fp16": {"enabled": true, "loss_scale": 256})",
     "fp16.loss_scale", "256", "needs dynamic loss scaling", false},
    {"onebit_lamb_amsgrad", R"("optimizer": {"type": "OneBitLamb", "params": {"amsgrad": true}})",
     "optimizer.params.amsgrad", "true", "OneBitLamb has no AMSGrad variant", false},
    {"onebit_lamb_with_zero", R"("optimizer": {"type": "OneBitLamb"}, "zero_optimization": {"stage": 3})",
     "zero_optimization.stage", "3", "OneBitLamb keeps every parameter's optimizer state on every rank", false},
    {"zero_one_not_fp16", R"("optimizer": {"type": "ZeroOneAdam", "params": {"var_freeze_step": 10}})",
     "optimizer.type", "\"ZeroOneAdam\"", "verified under fp16 only", true},
    {"onebit_unknown_backend", R"("optimizer": {"type": "OneBitAdam", "params": {"comm_backend_name": "gloo"}})",
     "optimizer.params.comm_backend_name", "\"gloo\"", "", false},
    {"onebit_not_fp16", R"("optimizer": {"type": "onebitadam", "params": {"freeze_step": 10}})",
     "optimizer.type", "\"OneBitAdam\"", "verified under fp16 only", true},
    {"clipping_negative", R"("gradient_clipping": -1)", "gradient_clipping", "-1", "turns clipping off", true},
    // Warnings.
    {"stage3_key_at_stage2", R"("zero_optimization": {"stage": 2, "stage3_max_live_parameters": 1e9})",
     "zero_optimization.stage3_max_live_parameters", "", "no effect at stage 2", true},
    {"bare_stage3_key_at_stage1", R"("zero_optimization": {"stage": 1, "param_persistence_threshold": 10})",
     "zero_optimization.stage3_param_persistence_threshold", "", "no effect at stage 1", true},
    {"activation_checkpointing_noop", R"("activation_checkpointing": {"profile": true})", "activation_checkpointing", "",
     "has no effect", true},
    {"ratio_without_offload", R"("zero_optimization": {"stage": 3, "offload_optimizer": {"ratio": 0.5}})",
     "zero_optimization.offload_optimizer.ratio", "0.5", "has no effect", true},
};

void check_combo(const ComboCase& c) {
  SCOPED_TRACE(c.name);
  const auto r = load(std::string(R"({"train_micro_batch_size_per_gpu": 1, )") + c.body + "}");
  const Diagnostic* d = find(r, c.path, c.text, c.warning ? Severity::Warning : Severity::Error);
  ASSERT_NE(d, nullptr) << test::dump(r);
  EXPECT_EQ(d->value, c.value);
  EXPECT_FALSE(d->fix.empty());
  if (c.warning) EXPECT_TRUE(r.valid()) << test::dump(r);
  else EXPECT_FALSE(r.valid());
}
TEST(Validate, EveryInvalidCombination) {
  for (const auto& c : kCombos) check_combo(c);
}

// Each combination's message differs from every other's: no catch-all text.
// hpZ's groups must tile the world a launch or --world-size gives (not the default of one rank,
// which `check` assumes when it is not told); hpz 1 is off at every stage.
TEST(Validate, HpzGroupsMustTileTheWorld) {
  LoadOptions o;
  o.world_size = 8;
  o.world_source = WorldSizeSource::Flag;
  const auto bad = load(R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3, "zero_hpz_partition_size": 3}})", o);
  const Diagnostic* d = find(bad, "zero_optimization.zero_hpz_partition_size", "must tile the world of 8 ranks", Severity::Error);
  ASSERT_NE(d, nullptr) << test::dump(bad);
  EXPECT_EQ(d->value, "3");
  const auto good = load(R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3, "zero_hpz_partition_size": 4}})", o);
  EXPECT_TRUE(good.valid()) << test::dump(good);
  EXPECT_EQ(good.config.zero_optimization.hpz_partition_size.value, 4);
  const auto off = load(R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 1, "zero_hpz_partition_size": 1}})", o);
  EXPECT_TRUE(off.valid()) << test::dump(off);
}

// MiCS's shard groups must tile the world a launch or --world-size gives; -1 (DeepSpeed's default)
// and 0 are off at every stage, and the engine options follow the keys.
TEST(Validate, MicsGroupsMustTileTheWorld) {
  LoadOptions o;
  o.world_size = 8;
  o.world_source = WorldSizeSource::Flag;
  const auto bad = load(R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3, "mics_shard_size": 3}})", o);
  const Diagnostic* d = find(bad, "zero_optimization.mics_shard_size", "must tile the world of 8 ranks", Severity::Error);
  ASSERT_NE(d, nullptr) << test::dump(bad);
  EXPECT_EQ(d->value, "3");
  const auto good = load(
      R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3, "mics_shard_size": 4, "mics_hierarchical_params_gather": true}})", o);
  ASSERT_TRUE(good.valid()) << test::dump(good);
  EXPECT_EQ(good.config.zero_optimization.mics_shard_size.value, 4);
  EXPECT_EQ(zero_option_set(good.config).mics_shard_size, 4);
  for (const char* off : {R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 1, "mics_shard_size": -1}})",
                          R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3, "mics_shard_size": 0}})"}) {
    const auto r = load(off, o);
    EXPECT_TRUE(r.valid()) << test::dump(r);
    EXPECT_EQ(zero_option_set(r.config).mics_shard_size, 0);
  }
}

// qwZ and qgZ run on the cpu backend only: on cuda each is refused, naming the key and the way out;
// on the cpu backend at stage 3 each is accepted and read. LoCo is still refused as not built.
TEST(Validate, QuantizedCollectivesNeedTheCpuBackend) {
  const struct {
    const char* key;
    Field<bool> ZeroConfig::*field;
  } keys[] = {{"zero_quantized_weights", &ZeroConfig::quantized_weights},
              {"zero_quantized_gradients", &ZeroConfig::quantized_gradients}};
  for (const auto& k : keys) {
    SCOPED_TRACE(k.key);
    const std::string text = std::string(R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3, ")") +
                             k.key + R"(": true}})";
    LoadOptions o;
    o.backend = ComputeBackend::Cuda;
    const auto cuda = load(text, o);
    const Diagnostic* d = find(cuda, std::string("zero_optimization.") + k.key, "cpu backend only", Severity::Error);
    ASSERT_NE(d, nullptr) << test::dump(cuda);
    EXPECT_EQ(d->value, "true");
    EXPECT_NE(d->fix.find("--backend cpu"), std::string::npos) << d->fix;
    const auto cpu = load(text);
    ASSERT_TRUE(cpu.valid()) << test::dump(cpu);
    EXPECT_TRUE((cpu.config.zero_optimization.*k.field).value);
  }
  const auto loco = load(R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3, "zero_quantized_gradients": true, "zeropp_loco_param": {"err_beta": 0.8, "reset_T": 1024}}})");
  EXPECT_FALSE(loco.valid()) << test::dump(loco);
}

TEST(Validate, MessagesAreDistinct) {
  std::set<std::string> seen;
  for (const auto& c : kCombos) {
    const auto r = load(std::string(R"({"train_micro_batch_size_per_gpu": 1, )") + c.body + "}");
    const Diagnostic* d = find(r, c.path, c.text, c.warning ? Severity::Warning : Severity::Error);
    ASSERT_NE(d, nullptr) << c.name;
    seen.insert(d->path + "|" + d->message);
  }
  EXPECT_GE(seen.size(), std::size(kCombos) - 6);  // a few rows share a message on purpose (same check, another key)
}

// The check runs as an unprivileged user: root writes anywhere, so as root (CI) the validation runs
// in a child that has dropped to nobody's uid and gid and reports through its exit status.
TEST(Validate, NvmePathNotWritable) {
  const std::string dir = ::testing::TempDir() + "zt_ro_dir";
  mkdir(dir.c_str(), 0555);
  chmod(dir.c_str(), 0555);
  const std::string cfg = R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3, "offload_param": {"device": "nvme", "nvme_path": ")" +
                          dir + "\"}}}";
  if (geteuid() != 0) {
    const auto r = load(cfg);
    EXPECT_NE(find(r, "zero_optimization.offload_param.nvme_path", "not writable"), nullptr) << test::dump(r);
    rmdir(dir.c_str());
    return;
  }
  const pid_t child = fork();
  ASSERT_GE(child, 0) << std::strerror(errno);
  if (child == 0) {
    constexpr uid_t kNobody = 65534;
    if (setgroups(0, nullptr) != 0 || setgid(kNobody) != 0 || setuid(kNobody) != 0) _exit(3);
    if (access(dir.c_str(), W_OK) == 0) _exit(4);  // the privileges were not dropped
    const auto r = load(cfg);
    _exit(find(r, "zero_optimization.offload_param.nvme_path", "not writable") != nullptr ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  rmdir(dir.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << "the unprivileged child ended with status " << status;
  if (WEXITSTATUS(status) == 3) ZT_SKIP_OR_FAIL_IN_CI("cannot drop root's privileges here (setuid to nobody refused)");
  EXPECT_NE(WEXITSTATUS(status), 4) << "as nobody the read-only directory was still writable";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "as nobody, the unwritable nvme_path was not reported as not writable";
}

TEST(Validate, NvmePathGoodDirectory) {
  const auto r = load(R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3,
      "offload_optimizer": {"device": "nvme", "nvme_path": "/tmp"}, "offload_param": {"device": "nvme", "nvme_path": "/tmp"}}})");
  EXPECT_TRUE(r.valid()) << test::dump(r);
}

TEST(Validate, AllErrorsAtOnce) {
  const auto r = load(R"({"train_batch_size": 32, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 4,
      "fp16": {"enabled": true}, "bf16": {"enabled": true}, "zero_optimization": {"stage": 2, "offload_param": {"device": "cpu"}},
      "optimizer": {"type": "AdamW", "params": {"max_grad_norm": 1}}, "scheduler": {"type": "WarmupDecayLR"}, "bogus": 1})");
  EXPECT_GE(r.diagnostics.error_count(), 6u) << test::dump(r);
  for (const auto& d : r.diagnostics.all()) {
    EXPECT_FALSE(d.path.empty());
    EXPECT_FALSE(d.message.empty());
    EXPECT_FALSE(d.fix.empty()) << format_diagnostic(d);
  }
}

TEST(Validate, OverlapCommDefaultFollowsStage) {
  auto r = load(R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3}})");
  EXPECT_TRUE(r.config.zero_optimization.overlap_comm.value);
  EXPECT_EQ(r.config.zero_optimization.overlap_comm.source.kind, SourceKind::Derived);
  r = load(R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2}})");
  EXPECT_FALSE(r.config.zero_optimization.overlap_comm.value);
}

TEST(Validate, DeepSpeedDefaults) {
  const auto r = load(R"({"train_micro_batch_size_per_gpu": 1})");
  ASSERT_TRUE(r.valid());
  const Config& c = r.config;
  const auto& z = c.zero_optimization;
  EXPECT_EQ(z.stage.value, 0);
  EXPECT_EQ(z.reduce_bucket_size.value, 500000000);
  EXPECT_EQ(z.allgather_bucket_size.value, 500000000);
  EXPECT_EQ(z.prefetch_bucket_size.value, 50000000);
  EXPECT_EQ(z.param_persistence_threshold.value, 100000);
  EXPECT_EQ(z.max_live_parameters.value, 1000000000);
  EXPECT_EQ(z.max_reuse_distance.value, 1000000000);
  EXPECT_EQ(z.sub_group_size.value, 1000000000);
  EXPECT_EQ(z.offload_optimizer.device.value, "none");
  EXPECT_TRUE(z.offload_optimizer.pin_memory.value);
  EXPECT_EQ(z.offload_optimizer.buffer_count.value, 4);
  EXPECT_EQ(z.offload_param.buffer_count.value, 5);
  EXPECT_EQ(c.fp16.initial_scale_power.value, 16);
  EXPECT_EQ(c.fp16.loss_scale_window.value, 1000);
  EXPECT_EQ(c.fp16.hysteresis.value, 2);
  EXPECT_EQ(c.fp16.min_loss_scale.value, 1);
  EXPECT_EQ(c.aio.block_size.value, 1048576);
  EXPECT_EQ(c.aio.queue_depth.value, 8);
  EXPECT_EQ(c.steps_per_print.value, std::optional<int64_t>(10));
  EXPECT_DOUBLE_EQ(c.gradient_clipping.value, 1.0);  // DeepSpeed 0.19.5's GRADIENT_CLIPPING_DEFAULT
  EXPECT_EQ(z.stage.source.kind, SourceKind::Default);
}

}  // namespace
}  // namespace zt
