// DeepSpeed's documented estimators for a 7B model on one node of 8 GPUs, worked by hand from the
// formulas (buffer factor 1.5; DeepSpeed prints bytes / 2^30 as "GB").
#include <gtest/gtest.h>

#include "runtime/plan/deepspeed_estimate.h"
#include "runtime/plan/memory_plan.h"

namespace zt {
namespace {

constexpr int64_t kPsi = 7'000'000'000;
constexpr int64_t kLargest = 32'000LL * 4096;  // a 7B LLaMA-shaped embedding: 131,072,000 params

TEST(DeepSpeedEstimate, Zero2SevenBillionOnEightGpus) {
  // No offload: GPU 4Ψ + 16Ψ/8 = 28e9 + 14e9 = 42e9 B (39.12 GiB); CPU 4Ψ·8·1.5 = 336e9 B.
  DsEstimate e = ds_estimate_zero2(kPsi, 8, 1, false);
  EXPECT_DOUBLE_EQ(e.device_bytes, 42e9);
  EXPECT_DOUBLE_EQ(e.host_bytes, 336e9);
  // offload_optimizer: GPU 2Ψ = 14e9 B (13.04 GiB); CPU Ψ·max(4·8, 16)·1.5 = 336e9 B (312.92 GiB).
  e = ds_estimate_zero2(kPsi, 8, 1, true);
  EXPECT_DOUBLE_EQ(e.device_bytes, 14e9);
  EXPECT_DOUBLE_EQ(e.host_bytes, 336e9);
  // One GPU with offload: CPU Ψ·max(4, 16)·1.5 = 168e9 B.
  EXPECT_DOUBLE_EQ(ds_estimate_zero2(kPsi, 1, 1, true).host_bytes, 168e9);
}

TEST(DeepSpeedEstimate, Zero3SevenBillionOnEightGpus) {
  // largest_layer_memory = 4·131,072,000 = 524,288,000 B.
  // No offload: GPU 524,288,000 + 18Ψ/8 (15.75e9) = 16,274,288,000 B (15.16 GiB);
  //   CPU zero_init: 4·131,072,000·8·1.5 = 6,291,456,000 B; without zero_init 4Ψ·8·1.5 = 336e9 B.
  DsEstimate e = ds_estimate_zero3(kPsi, kLargest, 8, 1, false, false, true);
  EXPECT_DOUBLE_EQ(e.device_bytes, 16'274'288'000.0);
  EXPECT_DOUBLE_EQ(e.host_bytes, 6'291'456'000.0);
  EXPECT_DOUBLE_EQ(ds_estimate_zero3(kPsi, kLargest, 8, 1, false, false, false).host_bytes, 336e9);
  // offload_optimizer: GPU 524,288,000 + 2Ψ/8 (1.75e9) = 2,274,288,000 B;
  //   CPU zero_init 16Ψ·1.5 = 168e9 B; without zero_init Ψ·max(32, 16)·1.5 = 336e9 B.
  e = ds_estimate_zero3(kPsi, kLargest, 8, 1, true, false, true);
  EXPECT_DOUBLE_EQ(e.device_bytes, 2'274'288'000.0);
  EXPECT_DOUBLE_EQ(e.host_bytes, 168e9);
  EXPECT_DOUBLE_EQ(ds_estimate_zero3(kPsi, kLargest, 8, 1, true, false, false).host_bytes, 336e9);
  // offload_optimizer + offload_param: GPU 524,288,000 B; CPU zero_init 18Ψ·1.5 = 189e9 B.
  e = ds_estimate_zero3(kPsi, kLargest, 8, 1, true, true, true);
  EXPECT_DOUBLE_EQ(e.device_bytes, 524'288'000.0);
  EXPECT_DOUBLE_EQ(e.host_bytes, 189e9);
  // Two nodes of four: the node's share of 16Ψ is halved: 16Ψ·(1/2)·1.5 = 84e9 B.
  EXPECT_DOUBLE_EQ(ds_estimate_zero3(kPsi, kLargest, 4, 2, true, false, true).host_bytes, 84e9);
}

TEST(DeepSpeedEstimate, PlanShowsTheMatchingEstimator) {
  PlanInput in;
  in.params = kPsi;
  in.world_size = 8;
  in.ranks_per_node = 8;
  in.precision = DType::BF16;
  in.stage = 2;
  MemoryPlan p = make_memory_plan(in);
  EXPECT_EQ(p.ds_estimator, "estimate_zero2_model_states_mem_needs");
  EXPECT_DOUBLE_EQ(p.ds_estimate_device, 42e9);
  in.stage = 3;
  in.largest_layer_params = kLargest;
  in.offload_optimizer = OffloadDevice::CPU;
  p = make_memory_plan(in);
  EXPECT_EQ(p.ds_estimator, "estimate_zero3_model_states_mem_needs");
  EXPECT_DOUBLE_EQ(p.ds_estimate_device, 2'274'288'000.0);
  EXPECT_DOUBLE_EQ(p.ds_estimate_host, 168e9);
  // Our own stage-3 model states without offload (16Ψ/8 = 14e9) sit below DeepSpeed's 18Ψ/8 + 4P:
  // it counts fp32 gradients (2 + 4 + 8 + 4 = 18) where we keep bf16 ones, plus a gathered layer.
  in.offload_optimizer = OffloadDevice::None;
  p = make_memory_plan(in);
  EXPECT_DOUBLE_EQ(p.device_model_states(), 14e9);
  EXPECT_LT(p.device_model_states(), p.ds_estimate_device);
  // Largest layer derived from GPT-2 shapes when not given: max(V·h, 4h² + 4h).
  in.largest_layer_params = 0;
  in.hidden = 768;
  in.vocab = 50257;
  EXPECT_EQ(make_memory_plan(in).ds_largest_layer_params, 50257LL * 768);
}

}  // namespace
}  // namespace zt
