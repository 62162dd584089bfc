// One error policy (issue 10, item 6): every refusal the engine used to throw at start-up, one at a
// time, now comes from validation with its key, value and fix, for the backend the run will use, and
// several at once are all reported.
#include <gtest/gtest.h>

#include "runtime/config/zero_sizes.h"
#include "tests/config/config_test_util.h"

namespace zt {
namespace {

using test::find;

struct PolicyCase {
  const char* name;
  const char* body;  // after the batch key
  ComputeBackend backend;
  const char* path;
  const char* text;
};

const PolicyCase kCases[] = {
    {"cuda_fp32", R"("zero_optimization": {"stage": 1})", ComputeBackend::Cuda, "bf16.enabled",
     "the cuda backend computes in bf16 and the config trains in fp32"},
    {"cuda_fp16", R"("fp16": {"enabled": true})", ComputeBackend::Cuda, "fp16.enabled", "trains in fp16"},
    {"cuda_comm_dtype", R"("bf16": {"enabled": true}, "communication_data_type": "fp16")", ComputeBackend::Cuda,
     "communication_data_type", "in bf16 only"},
    {"cuda_grad_accum_dtype", R"("bf16": {"enabled": true}, "data_types": {"grad_accum_dtype": "fp32"})", ComputeBackend::Cuda,
     "data_types.grad_accum_dtype", "in bf16 only"},
    {"cuda_param_offload_device_adam", R"("bf16": {"enabled": true}, "zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"}})",
     ComputeBackend::Cuda, "zero_optimization.offload_param.device", "offload_optimizer.device is \"none\""},
    {"cuda_param_offload_partial", R"("bf16": {"enabled": true}, "zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"},
     "offload_optimizer": {"device": "cpu", "ratio": 0.5}})",
     ComputeBackend::Cuda, "zero_optimization.offload_param.device", "offload_optimizer.ratio is 0.5"},
    {"ratio_needs_adam", R"("optimizer": {"type": "SGD", "params": {"lr": 0.1}},
     "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "ratio": 0.5}})",
     ComputeBackend::Cpu, "zero_optimization.offload_optimizer.ratio", "where only Adam/AdamW run"},
    {"lamb_on_nvme", R"("optimizer": {"type": "Lamb", "params": {"lr": 0.01}},
     "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "nvme", "nvme_path": "/tmp"}})",
     ComputeBackend::Cpu, "optimizer.type", "cannot be paged to NVMe"},
    {"amsgrad", R"("optimizer": {"type": "Adam", "params": {"amsgrad": true}})", ComputeBackend::Cpu, "optimizer.params.amsgrad",
     "FusedAdam does not support"},
    {"fp16_master", R"("fp16": {"enabled": true, "fp16_master_weights_and_grads": true})", ComputeBackend::Cpu,
     "fp16.fp16_master_weights_and_grads", "not implemented"},
};

LoadOptions with_backend(ComputeBackend b) {
  LoadOptions o;
  o.backend = b;
  o.probe_paths = false;
  return o;
}

TEST(EnginePolicy, EveryFormerEngineRefusalComesFromValidation) {
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    const auto r = test::load(std::string(R"({"train_micro_batch_size_per_gpu": 1, )") + c.body + "}", with_backend(c.backend));
    EXPECT_FALSE(r.valid());
    const Diagnostic* d = find(r, c.path, c.text);
    ASSERT_NE(d, nullptr) << test::dump(r);
    EXPECT_FALSE(d->value.empty());
    EXPECT_FALSE(d->fix.empty());
  }
}

TEST(EnginePolicy, TheSameConfigsRunOnTheCpuBackend) {
  for (const auto& c : kCases) {
    if (c.backend != ComputeBackend::Cuda) continue;
    SCOPED_TRACE(c.name);
    const auto r = test::load(std::string(R"({"train_micro_batch_size_per_gpu": 1, )") + c.body + "}", with_backend(ComputeBackend::Cpu));
    EXPECT_TRUE(r.valid()) << test::dump(r);
  }
  // And parameter offload on cuda with the optimizer on the host is accepted.
  const auto ok = test::load(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}, "zero_optimization": {"stage": 3,
      "offload_param": {"device": "cpu"}, "offload_optimizer": {"device": "cpu"}}})", with_backend(ComputeBackend::Cuda));
  EXPECT_TRUE(ok.valid()) << test::dump(ok);
}

TEST(EnginePolicy, SeveralAtOnceAreAllReported) {
  const auto r = test::load(R"({"train_micro_batch_size_per_gpu": 1, "communication_data_type": "fp32",
      "optimizer": {"type": "Lamb", "params": {"lr": 0.01}}, "fp16": {"enabled": true, "fp16_master_weights_and_grads": true},
      "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "nvme", "nvme_path": "/tmp"},
                            "offload_param": {"device": "nvme", "nvme_path": "/tmp", "buffer_size": 1000}}})",
                            [] {
                              LoadOptions o = with_backend(ComputeBackend::Cuda);
                              o.model = *model_preset("small");
                              o.world_size = 2;
                              return o;
                            }());
  const std::pair<const char*, const char*> want[] = {
      {"fp16.enabled", "computes in bf16"},
      {"communication_data_type", "in bf16 only"},
      {"optimizer.type", "cannot be paged to NVMe"},
      {"fp16.fp16_master_weights_and_grads", "not implemented"},
      {"zero_optimization.offload_param.buffer_size", "raise buffer_size to at least 99136"},
  };
  for (auto [path, text] : want) EXPECT_NE(find(r, path, text), nullptr) << path << "\n" << test::dump(r);
  EXPECT_EQ(r.diagnostics.error_count(), std::size(want)) << test::dump(r);
}

// DeepSpeed's zeros become the sizes that mean the same thing for the model (zero_sizes.h).
TEST(EnginePolicy, ZeroSizesMeanWhatDeepSpeedMeans) {
  const auto r = test::load(R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3, "reduce_bucket_size": 0,
      "allgather_bucket_size": 0, "sub_group_size": 0, "stage3_max_live_parameters": 0, "stage3_prefetch_bucket_size": 0}})",
                            [] {
                              LoadOptions o;
                              o.world_size = 4;
                              return o;
                            }());
  ASSERT_TRUE(r.valid()) << test::dump(r);
  const ModelConfig small = *model_preset("small");  // vocab 256, dim 128, seq 64: largest tensor 4 * 128 * 128
  EXPECT_EQ(largest_tensor_numel(small), 65536);
  const ZeroSizes s = zero_sizes(r.config.zero_optimization, 4, &small);
  EXPECT_EQ(s.reduce_bucket, 65536);          // each tensor on its own: no bucket above the largest tensor
  EXPECT_EQ(s.sub_group, 16384);              // one tensor's per-rank share
  EXPECT_EQ(s.allgather_bucket, small.total_params());  // one gather per unit
  const ZeroSizes kept = zero_sizes(ZeroConfig{}, 4, &small);
  EXPECT_EQ(kept.reduce_bucket, 500000000);   // non-zero values pass unchanged
}

}  // namespace
}  // namespace zt
