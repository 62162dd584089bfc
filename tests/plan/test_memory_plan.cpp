// The memory plan against the ZeRO paper's table, the fp32 sizes, each optimizer's K, what offload
// moves to host / NVMe, activations, buffers, and the JSON / table forms.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "runtime/plan/memory_plan.h"

namespace zt {
namespace {

PlanInput paper_input(int stage) {
  PlanInput in;
  in.params = 7'500'000'000;  // Ψ = 7.5B (the paper's Figure 1 / Table 1 example)
  in.world_size = 64;
  in.stage = stage;
  in.precision = DType::F16;
  in.optimizer = OptimizerType::AdamL2;
  return in;
}

// ZeRO paper (Rajbhandari et al. 2020), Ψ = 7.5B, N_d = 64, K = 12: 120 / 31.4 / 16.6 / 1.9 GB for
// stages 0-3, where the paper's GB are 1e9 bytes. Exact values: 16Ψ = 120, 4Ψ + 12Ψ/64 = 31.406,
// 2Ψ + 14Ψ/64 = 16.641, 16Ψ/64 = 1.875.
TEST(MemoryPlan, ZeroPaperTableAt7_5BOn64Ranks) {
  const double paper_gb[4] = {120.0, 31.4, 16.6, 1.9};
  for (int stage = 0; stage <= 3; ++stage) {
    const MemoryPlan p = make_memory_plan(paper_input(stage));
    EXPECT_EQ(p.optimizer_k, 12);
    EXPECT_NEAR(p.device_model_states() / 1e9, paper_gb[stage], 0.05) << "stage " << stage;
  }
  const MemoryPlan s2 = make_memory_plan(paper_input(2));
  EXPECT_DOUBLE_EQ(s2.device_params, 2 * 7.5e9);
  EXPECT_DOUBLE_EQ(s2.device_grads, 2 * 7.5e9 / 64);
  EXPECT_DOUBLE_EQ(s2.device_optimizer, 12 * 7.5e9 / 64);
  const MemoryPlan s3 = make_memory_plan(paper_input(3));
  EXPECT_DOUBLE_EQ(s3.device_model_states(), 16 * 7.5e9 / 64);
}

// The JSON's stage divisors (what the sweep builds ZeRO's formula from) reproduce the plan's own
// per-category bytes: w·Ψ/params and w·Ψ/grads, K·Ψ/optimizer, stage by stage.
TEST(MemoryPlan, JsonStageDivisorsReproduceTheModelStates) {
  const double expected[4][3] = {{1, 1, 1}, {1, 1, 64}, {1, 64, 64}, {64, 64, 64}};
  for (int stage = 0; stage <= 3; ++stage) {
    const MemoryPlan p = make_memory_plan(paper_input(stage));
    const nlohmann::json d = plan_to_json(p)["stage_divisors"];
    EXPECT_EQ(d["params"].get<double>(), expected[stage][0]) << "stage " << stage;
    EXPECT_EQ(d["grads"].get<double>(), expected[stage][1]) << "stage " << stage;
    EXPECT_EQ(d["optimizer"].get<double>(), expected[stage][2]) << "stage " << stage;
    EXPECT_DOUBLE_EQ(p.device_params, p.working_bytes * 7.5e9 / d["params"].get<double>());
    EXPECT_DOUBLE_EQ(p.device_grads, p.working_bytes * 7.5e9 / d["grads"].get<double>());
    EXPECT_DOUBLE_EQ(p.device_optimizer, p.optimizer_k * 7.5e9 / d["optimizer"].get<double>());
  }
}

// MiCS: the states shard over the group of s ranks, and the JSON's divisors say s, not the world
// (the sweep's formula for a MiCS run); below stage 3 the key changes nothing.
TEST(MemoryPlan, MicsShardsTheStatesOverItsGroup) {
  PlanInput in = paper_input(3);
  in.mics_shard_size = 8;
  EXPECT_EQ(plan_state_shards(in), 8);
  const MemoryPlan p = make_memory_plan(in);
  const nlohmann::json d = plan_to_json(p)["stage_divisors"];
  for (const char* k : {"params", "grads", "optimizer"}) EXPECT_EQ(d[k].get<double>(), 8) << k;
  EXPECT_DOUBLE_EQ(p.device_model_states(), 16 * 7.5e9 / 8);
  in.stage = 2;
  EXPECT_EQ(plan_state_shards(in), 64);
  EXPECT_EQ(plan_to_json(make_memory_plan(in))["stage_divisors"]["optimizer"].get<double>(), 64);
}

TEST(MemoryPlan, OptimizerKCountsMasterCopyUnderMixedPrecision) {
  struct Case {
    std::optional<OptimizerType> opt;
    bool momentum;
    DType prec;
    int master, state;
  } cases[] = {
      {OptimizerType::AdamL2, false, DType::BF16, 4, 8},        {OptimizerType::AdamW, false, DType::F16, 4, 8},
      {OptimizerType::Lamb, false, DType::BF16, 4, 8},        {OptimizerType::SGD, true, DType::BF16, 4, 4},
      {OptimizerType::SGD, false, DType::BF16, 4, 0},         {std::nullopt, false, DType::BF16, 0, 0},
      {OptimizerType::AdamW, false, DType::F32, 0, 8},       {OptimizerType::SGD, true, DType::F32, 0, 4},
      {OptimizerType::SGD, false, DType::F32, 0, 0},
  };
  for (const auto& c : cases) {
    PlanInput in;
    in.params = 1000;
    in.optimizer = c.opt;
    in.sgd_momentum = c.momentum;
    in.precision = c.prec;
    const MemoryPlan p = make_memory_plan(in);
    EXPECT_EQ(p.master_k, c.master) << optimizer_name(in) << " " << dtype_name(c.prec);
    EXPECT_EQ(p.state_k, c.state) << optimizer_name(in) << " " << dtype_name(c.prec);
    EXPECT_EQ(p.optimizer_k, c.master + c.state);
    EXPECT_DOUBLE_EQ(p.device_optimizer, double(c.master + c.state) * 1000);
  }
}

TEST(MemoryPlan, Fp32TrainingUsesFourByteParamsAndGradsAndNoMaster) {
  PlanInput in;
  in.params = 1'000'000;
  in.world_size = 4;
  in.precision = DType::F32;
  in.optimizer = OptimizerType::AdamW;
  in.stage = 0;
  MemoryPlan p = make_memory_plan(in);
  EXPECT_EQ(p.working_bytes, 4);
  EXPECT_DOUBLE_EQ(p.device_params, 4e6);
  EXPECT_DOUBLE_EQ(p.device_grads, 4e6);
  EXPECT_DOUBLE_EQ(p.device_optimizer, 8e6);  // two fp32 moments, no master
  in.stage = 3;
  p = make_memory_plan(in);
  EXPECT_DOUBLE_EQ(p.device_model_states(), 16e6 / 4);
}

TEST(MemoryPlan, CpuOffloadMovesOptimizerMasterAndFp32GradsToHostPerNode) {
  PlanInput in;
  in.params = 7'000'000'000;
  in.world_size = 8;
  in.ranks_per_node = 8;
  in.stage = 2;
  in.precision = DType::BF16;
  in.optimizer = OptimizerType::AdamW;
  const MemoryPlan on_gpu = make_memory_plan(in);
  in.offload_optimizer = OffloadDevice::CPU;
  const MemoryPlan off = make_memory_plan(in);
  EXPECT_DOUBLE_EQ(off.device_optimizer, 0);
  // Stage 2: the engine reduces into its device gradient shard and copies it out from there.
  EXPECT_DOUBLE_EQ(off.device_grads, on_gpu.device_grads);
  EXPECT_DOUBLE_EQ(off.device_grads, 2 * 7e9 / 8);
  EXPECT_DOUBLE_EQ(off.device_params, on_gpu.device_params);  // the bf16 working copy stays
  // Per rank: (4 master + 8 moments + 4 fp32 grads)·Ψ/N = 16·7e9/8 = 14e9; per node ×8 = 112e9.
  EXPECT_DOUBLE_EQ(off.host_bytes_per_rank, 14e9);
  EXPECT_DOUBLE_EQ(off.host_bytes_per_node, 112e9);
  EXPECT_LT(off.device_total(), on_gpu.device_total());

  // Two ranks per node: the node holds two shards.
  in.ranks_per_node = 2;
  EXPECT_DOUBLE_EQ(make_memory_plan(in).host_bytes_per_node, 28e9);

  // Stage 1 keeps the full bf16 gradients on the device.
  in.stage = 1;
  EXPECT_DOUBLE_EQ(make_memory_plan(in).device_grads, 2 * 7e9);
}

// With --save the checkpoint writer's snapshot is host RAM on every backend: its own row, in the host
// totals per rank and node, in the JSON, and named in the table's note; without it none of these.
TEST(MemoryPlan, CheckpointSnapshotIsHostRamWithItsOwnRow) {
  PlanInput in;
  in.params = 8'000'000;
  in.world_size = 4;
  in.ranks_per_node = 4;
  in.stage = 1;
  in.backend_is_host = true;
  const MemoryPlan without = make_memory_plan(in);
  EXPECT_DOUBLE_EQ(without.checkpoint_snapshot, 0);
  EXPECT_EQ(plan_to_table(without).find("checkpoint snapshot"), std::string::npos);
  EXPECT_NE(plan_to_table(without).find("ours only what offload keeps there."), std::string::npos);
  in.checkpoint_snapshot_bytes = 12 * 2'000'000;  // fp32 master + two moments of a quarter
  const MemoryPlan with = make_memory_plan(in);
  EXPECT_DOUBLE_EQ(with.checkpoint_snapshot, 24e6);
  EXPECT_DOUBLE_EQ(with.host_bytes_per_rank, without.host_bytes_per_rank + 24e6);
  EXPECT_DOUBLE_EQ(with.host_bytes_per_node, without.host_bytes_per_node + 4 * 24e6);
  EXPECT_DOUBLE_EQ(with.device_total(), without.device_total());
  EXPECT_EQ(plan_to_json(with)["checkpoint_snapshot_per_rank"].get<int64_t>(), 24'000'000);
  const std::string t = plan_to_table(with);
  const size_t row = t.find("  checkpoint snapshot / rank ");
  ASSERT_NE(row, std::string::npos) << t;
  const std::string line = t.substr(row, t.find('\n', row) - row);
  EXPECT_NE(line.find(" 0.02 "), std::string::npos) << line;  // 24e6 B
  EXPECT_NE(t.find("ours only what offload and the checkpoint snapshot keep there."), std::string::npos) << t;
}

TEST(MemoryPlan, PartialOffloadRatioKeepsTheRestOnDevice) {
  PlanInput in;
  in.params = 8'000'000;
  in.world_size = 4;
  in.stage = 3;
  in.precision = DType::BF16;
  in.offload_optimizer = OffloadDevice::CPU;
  in.offload_optimizer_ratio = 0.25;
  const MemoryPlan p = make_memory_plan(in);
  const double shard = 8e6 / 4;
  EXPECT_DOUBLE_EQ(p.device_optimizer, 0.75 * 12 * shard);
  EXPECT_DOUBLE_EQ(p.device_grads, 2 * shard);  // the gradient shard stays whole on the device
  EXPECT_DOUBLE_EQ(p.host_bytes_per_rank, 0.25 * 16 * shard);
}

TEST(MemoryPlan, NvmeAndParamOffload) {
  PlanInput in;
  in.params = 4'000'000'000;
  in.world_size = 8;
  in.ranks_per_node = 4;
  in.stage = 3;
  in.precision = DType::BF16;
  in.offload_optimizer = OffloadDevice::NVMe;
  in.offload_param = OffloadDevice::NVMe;
  const MemoryPlan p = make_memory_plan(in);
  const double shard = 4e9 / 8;
  EXPECT_DOUBLE_EQ(p.device_params, 0);
  EXPECT_DOUBLE_EQ(p.device_optimizer, 0);
  // NVMe per rank: (4 master + 8 moments)·shard + 2·shard bf16 params.
  EXPECT_DOUBLE_EQ(p.nvme_bytes_per_rank, 12 * shard + 2 * shard);
  EXPECT_DOUBLE_EQ(p.nvme_bytes_per_node, 4 * p.nvme_bytes_per_rank);
  // Host per rank: fp32 grads 4·shard, 4 optimizer swap buffers of min(sub_group_size 1e9, shard)
  // fp32 elements, 5 param buffers of 1e8 bf16 elements.
  EXPECT_DOUBLE_EQ(p.host_bytes_per_rank, 4 * shard + 4 * shard * 4 + 5 * 1e8 * 2);

  // offload_param cpu puts the bf16 shard in host RAM; below stage 3 it is ignored.
  in.offload_optimizer = OffloadDevice::None;
  in.offload_param = OffloadDevice::CPU;
  EXPECT_DOUBLE_EQ(make_memory_plan(in).host_bytes_per_rank, 2 * shard);
  in.stage = 2;
  EXPECT_DOUBLE_EQ(make_memory_plan(in).host_bytes_per_rank, 0);
}

// Activations are what the model allocates (GPT2::activation_bytes_for, given by the caller that
// knows the model and backend; tests/model pins that formula to the allocations): the plan carries
// the number into its total, and counts none without a model.
TEST(MemoryPlan, ActivationsAreWhatTheModelAllocates) {
  PlanInput in;
  in.params = 124'000'000;
  in.precision = DType::BF16;
  const MemoryPlan none = make_memory_plan(in);
  EXPECT_DOUBLE_EQ(none.device_activations, 0);
  in.activation_bytes = 3.5e9;
  const MemoryPlan with = make_memory_plan(in);
  EXPECT_DOUBLE_EQ(with.device_activations, 3.5e9);
  EXPECT_DOUBLE_EQ(with.device_total(), none.device_total() + 3.5e9);
  EXPECT_EQ(plan_working_bytes(in), 2);
  in.emulates_16bit_in_fp32 = true;
  EXPECT_EQ(plan_working_bytes(in), 4);
}

TEST(MemoryPlan, BuffersFollowBucketSizesCappedAtModelSize) {
  PlanInput in;
  in.params = 2'000'000'000;
  in.precision = DType::BF16;
  in.reduce_bucket_size = 200'000'000;
  in.allgather_bucket_size = 300'000'000;
  in.stage = 0;
  EXPECT_DOUBLE_EQ(make_memory_plan(in).device_buffers, 2 * 2e8);
  in.stage = 2;
  EXPECT_DOUBLE_EQ(make_memory_plan(in).device_buffers, 2 * (2e8 + 3e8));
  in.stage = 3;
  in.stage3_max_live_parameters = 100'000'000;
  in.stage3_prefetch_bucket_size = 50'000'000;
  EXPECT_DOUBLE_EQ(make_memory_plan(in).device_buffers, 2 * (2e8 + 1e8));
  in.params = 1000;  // buckets larger than the model hold at most the model
  EXPECT_DOUBLE_EQ(make_memory_plan(in).device_buffers, 2 * (1000 + 1000));
}

TEST(MemoryPlan, ReductionBuffersHoldThreeOfTheEnginesLargestUnits) {
  // gpt2-124m shapes: the embedding unit is 50257·768 + 1024·768 = 39,383,808 elements; the engine
  // reduces whole units (two in flight plus a tied head's embedding gradient), so a 5e7 bucket is
  // not enough: the plan must count 3 units.
  PlanInput in;
  in.params = 124'439'808;
  in.precision = DType::BF16;
  in.stage = 2;
  in.hidden = 768;
  in.vocab = 50257;
  in.seq_len = 1024;
  in.reduce_bucket_size = 50'000'000;
  in.allgather_bucket_size = 1;
  EXPECT_DOUBLE_EQ(make_memory_plan(in).device_buffers, 2 * (3.0 * 39'383'808 + 1));
  in.reduce_bucket_size = 500'000'000;  // a bucket beyond the units (capped at the model) wins
  EXPECT_DOUBLE_EQ(make_memory_plan(in).device_buffers, 2 * (124'439'808.0 + 1));
}

TEST(MemoryPlan, CommunicatorBuffersAndTheProcessBaselineHaveTheirOwnRows) {
  PlanInput in;
  in.params = 124'439'808;
  in.world_size = 4;
  in.stage = 2;
  in.comm_buffer_bytes = 64u << 20;
  in.backend_is_host = true;  // CPU ranks: the communicator's host buffers are the backend's memory
  const MemoryPlan cpu = make_memory_plan(in);
  in.comm_buffer_bytes = 0;
  const double without = make_memory_plan(in).device_buffers;
  EXPECT_DOUBLE_EQ(cpu.device_buffers, without + (64u << 20));
  EXPECT_DOUBLE_EQ(cpu.comm_buffers, 64u << 20);
  EXPECT_DOUBLE_EQ(cpu.host_bytes_per_rank, 0);
  in.comm_buffer_bytes = 64u << 20;
  in.backend_is_host = false;  // GPU ranks: host RAM beside the device
  in.ranks_per_node = 4;
  const MemoryPlan gpu = make_memory_plan(in);
  EXPECT_DOUBLE_EQ(gpu.device_buffers, without);
  EXPECT_DOUBLE_EQ(gpu.host_bytes_per_rank, 64u << 20);
  EXPECT_DOUBLE_EQ(gpu.host_bytes_per_node, 4.0 * (64u << 20));
  EXPECT_EQ(plan_to_json(gpu)["comm_buffers_per_rank"].get<int64_t>(), int64_t(64) << 20);
  // NCCL's buffers, as measured at its start, are device memory: in the device total, a row of their own.
  EXPECT_EQ(plan_to_json(gpu)["comm_device_buffers_per_rank"].get<int64_t>(), 0);
  in.comm_device_bytes = uint64_t(300) << 20;
  const MemoryPlan nccl = make_memory_plan(in);
  EXPECT_DOUBLE_EQ(nccl.device_buffers, without + (300u << 20));
  EXPECT_DOUBLE_EQ(nccl.host_bytes_per_rank, 64u << 20) << "the host row keeps only the host buffers";
  EXPECT_EQ(plan_to_json(nccl)["comm_device_buffers_per_rank"].get<int64_t>(), int64_t(300) << 20);
  const std::string table = plan_to_table(nccl);
  const size_t row = table.find("of which NCCL (measured) / rank");
  ASSERT_NE(row, std::string::npos) << table;
  EXPECT_NE(table.substr(row, table.find('\n', row) - row).find(" 0.29 "), std::string::npos) << table;
  EXPECT_EQ(plan_to_table(gpu).find("NCCL"), std::string::npos) << "nothing measured (check, host staging): no row";
  in.comm_device_bytes = 0;
  EXPECT_FALSE(plan_to_json(gpu).contains("process_baseline_per_rank")) << "not measured: not shown";
  EXPECT_EQ(plan_to_table(gpu).find("process baseline"), std::string::npos);
  in.process_baseline = uint64_t(3) << 29;  // 1.5 GiB
  const MemoryPlan measured = make_memory_plan(in);
  EXPECT_DOUBLE_EQ(measured.device_total(), gpu.device_total()) << "the baseline is not a device category";
  EXPECT_EQ(plan_to_json(measured)["process_baseline_per_rank"].get<uint64_t>(), uint64_t(3) << 29);
  const std::string t = plan_to_table(measured);
  EXPECT_NE(t.find("process baseline (measured) / rank"), std::string::npos) << t;
  EXPECT_NE(t.find("1.50"), std::string::npos) << t;
  EXPECT_NE(t.find("communicator (host RAM) / rank"), std::string::npos) << t;
}

TEST(MemoryPlan, JsonAndTableCarryOursAndDeepSpeeds) {
  PlanInput in;
  in.params = 7'000'000'000;
  in.world_size = 8;
  in.ranks_per_node = 8;
  in.stage = 2;
  in.precision = DType::BF16;
  const MemoryPlan p = make_memory_plan(in);
  const nlohmann::json j = plan_to_json(p);
  EXPECT_EQ(j["optimizer_k"], 12);
  EXPECT_EQ(j["device_per_rank"]["model_states"].get<int64_t>(), int64_t(2 * 7e9 + 14 * 7e9 / 8));
  EXPECT_EQ(j["deepspeed_estimate"]["function"], "estimate_zero2_model_states_mem_needs");
  EXPECT_EQ(j["deepspeed_estimate"]["device_per_rank"].get<int64_t>(), 42'000'000'000);
  EXPECT_EQ(j["input"]["precision"], "bf16");
  for (const char* k : {"params", "grads", "optimizer", "activations", "buffers", "total"}) {
    EXPECT_TRUE(j["device_per_rank"].contains(k)) << k;
  }
  const std::string t = plan_to_table(p);
  // Model states: 2·7e9 + 14·7e9/8 = 26.25e9 B = 24.45 GiB; DeepSpeed's 42e9 B = 39.12 GiB.
  EXPECT_NE(t.find("24.45"), std::string::npos) << t;
  EXPECT_NE(t.find("39.12"), std::string::npos) << t;
  EXPECT_NE(t.find("device optimizer states / rank"), std::string::npos);
  EXPECT_NE(t.find("host RAM / node"), std::string::npos);
  EXPECT_EQ(t.find("no stage-0/1 estimator"), std::string::npos);
  in.stage = 1;
  EXPECT_NE(plan_to_table(make_memory_plan(in)).find("no stage-0/1 estimator"), std::string::npos);
  in.stage = 3;
  in.offload_optimizer = OffloadDevice::NVMe;
  EXPECT_NE(plan_to_table(make_memory_plan(in)).find("NVMe offload is shown as if it were CPU"), std::string::npos);
}

}  // namespace
}  // namespace zt
