// The ZeRO rules (runtime/zero/zero_rules.h) as a table: each option set against the CPU and the
// CUDA backend's capabilities, the rules it breaks and the engine's one-line description of each.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "runtime/zero/zero_rules.h"

namespace zt {
namespace {

struct RuleRow {
  const char* name;
  ZeroOptionSet options;
  std::vector<ZeroRule> on_cpu, on_cuda;
};

ZeroOptionSet with(std::function<void(ZeroOptionSet&)> edit) {
  ZeroOptionSet o;
  edit(o);
  return o;
}

TEST(ZeroRules, EachRuleOnEachBackend) {
  using R = ZeroRule;
  const std::vector<RuleRow> rows = {
      {"fp32 defaults", {}, {}, {R::ComputePrecision}},
      {"bf16", with([](auto& o) { o.precision = DType::BF16; }), {}, {}},
      {"fp16 comm", with([](auto& o) { o.precision = DType::BF16; o.comm_precision = DType::F16; }), {}, {R::CommPrecision}},
      {"fp32 accumulation", with([](auto& o) { o.precision = DType::BF16; o.grad_accum_precision = DType::F32; }), {},
       {R::AccumPrecision}},
      {"param offload, Adam on the device",
       with([](auto& o) { o.precision = DType::BF16; o.stage = 3; o.offload_param = OffloadDevice::CPU; }), {},
       {R::ParamOffloadNeedsHostOptimizer}},
      {"param offload, optimizer offloaded", with([](auto& o) {
         o.precision = DType::BF16; o.stage = 3; o.offload_param = OffloadDevice::CPU; o.offload_optimizer = OffloadDevice::CPU;
       }), {}, {}},
      {"param offload, SGD steps on the host",
       with([](auto& o) { o.precision = DType::BF16; o.stage = 3; o.offload_param = OffloadDevice::NVMe; o.optimizer = OptimizerType::SGD; }),
       {}, {}},
      {"ratio at stage 2", with([](auto& o) { o.precision = DType::BF16; o.stage = 2; o.offload_optimizer = OffloadDevice::CPU; o.offload_ratio = 0.5; }),
       {R::PartialOffloadNeedsStage3Cpu}, {R::PartialOffloadNeedsStage3Cpu}},
      {"ratio with SGD", with([](auto& o) {
         o.precision = DType::BF16; o.stage = 3; o.offload_optimizer = OffloadDevice::CPU; o.offload_ratio = 0.5; o.optimizer = OptimizerType::SGD;
       }), {R::PartialOffloadNeedsAdam}, {R::PartialOffloadNeedsAdam}},
      {"Lamb on NVMe", with([](auto& o) { o.precision = DType::BF16; o.stage = 2; o.offload_optimizer = OffloadDevice::NVMe; o.optimizer = OptimizerType::Lamb; }),
       {R::LambOnNvme}, {R::LambOnNvme}},
      {"param buffer too small", with([](auto& o) {
         o.precision = DType::BF16; o.stage = 3; o.offload_param = OffloadDevice::NVMe; o.offload_optimizer = OffloadDevice::CPU;
         o.param_buffer_size = 99; o.largest_param_shard = 100;
       }), {R::ParamBufferTooSmall}, {R::ParamBufferTooSmall}},
      {"param buffer exactly the shard", with([](auto& o) {
         o.precision = DType::BF16; o.stage = 3; o.offload_param = OffloadDevice::NVMe; o.offload_optimizer = OffloadDevice::CPU;
         o.param_buffer_size = 100; o.largest_param_shard = 100;
       }), {}, {}},
      {"shard size unknown", with([](auto& o) {
         o.precision = DType::BF16; o.stage = 3; o.offload_param = OffloadDevice::NVMe; o.offload_optimizer = OffloadDevice::CPU;
         o.param_buffer_size = 1;
       }), {}, {}},
  };
  for (const RuleRow& row : rows) {
    SCOPED_TRACE(row.name);
    EXPECT_EQ(check_zero_options(row.options, BackendCaps::cpu()), row.on_cpu);
    EXPECT_EQ(check_zero_options(row.options, BackendCaps::cuda()), row.on_cuda);
    for (ZeroRule r : row.on_cuda) EXPECT_FALSE(describe(r, row.options).empty());
  }
}

TEST(ZeroRules, TheEngineDescriptionNamesTheFix) {
  ZeroOptionSet o;
  o.stage = 3;
  o.offload_param = OffloadDevice::NVMe;
  o.param_buffer_size = 10;
  o.largest_param_shard = 4096;
  const std::string text = describe(ZeroRule::ParamBufferTooSmall, o);
  EXPECT_NE(text.find("buffer_size = 10 elements"), std::string::npos) << text;
  EXPECT_NE(text.find("at least 4096"), std::string::npos) << text;
}

}  // namespace
}  // namespace zt
