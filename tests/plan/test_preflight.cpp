// preflight: the host-RAM error with its numbers for a plan that cannot fit, silence for one that
// can, the CPU-backend and GPU checks, and NVMe free space at nvme_path.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "runtime/plan/machine_probe.h"

namespace zt {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

MachineFacts host_with(double avail_gib, double total_gib = 64) {
  MachineFacts f;
  f.host_mem_available = uint64_t(avail_gib * kGiB);
  f.host_mem_total = uint64_t(total_gib * kGiB);
  return f;
}

PlanInput seven_b_offload() {
  PlanInput in;
  in.params = 7'000'000'000;
  in.world_size = 8;
  in.ranks_per_node = 8;
  in.stage = 2;
  in.precision = DType::BF16;
  in.optimizer = OptimizerType::AdamW;
  in.offload_optimizer = OffloadDevice::CPU;
  return in;
}

TEST(Preflight, HostRamShortfallNamesTheNumbers) {
  // Host per node: 8 ranks × 16·7e9/8 B = 112e9 B = 104.3 GiB; per rank 14e9 B = 13.0 GiB.
  MachineFacts f = host_with(31.2);
  f.gpu_free = uint64_t(70 * kGiB);
  f.gpu_total = uint64_t(80 * kGiB);
  const Diagnostics d = preflight(make_memory_plan(seven_b_offload()), f, "");
  ASSERT_EQ(d.error_count(), 1u) << d.format();
  const Diagnostic& e = d.all()[0];
  EXPECT_EQ(e.message,
            "offload_optimizer=cpu needs 104.3 GiB of host RAM for 7.0B params at world size 8; this host "
            "has 31.2 GiB available");
  EXPECT_EQ(e.path, "zero_optimization.offload_optimizer.device");
  EXPECT_EQ(e.value, "cpu");
  // 31.2 GiB / 13.04 GiB per rank: two ranks fit on this node.
  EXPECT_NE(e.fix.find("run at most 2 rank(s) per node"), std::string::npos) << e.fix;
  EXPECT_NE(e.fix.find("nvme"), std::string::npos) << e.fix;
}

// A run that saves holds each rank's snapshot of its master and moments in host RAM beside a GPU:
// 8 ranks of a 7B bf16 AdamW model at stage 2 hold 12 + 4 bytes x 7e9 / 8 = 14e9 B each, 104.3 GiB
// for the node, which a host with 31.2 GiB available cannot give; the error names --save, its
// folder and the bytes, and the fix says what the snapshot is for.
TEST(Preflight, CheckpointSnapshotCountsAgainstHostRam) {
  PlanInput in = seven_b_offload();
  in.offload_optimizer = OffloadDevice::None;
  in.checkpoint_snapshot_bytes = uint64_t(16) * 7'000'000'000 / 8;
  in.save_dir = "/ckpt/run1";
  MachineFacts f = host_with(31.2);
  f.gpu_free = uint64_t(70 * kGiB);
  f.gpu_total = uint64_t(80 * kGiB);
  const MemoryPlan p = make_memory_plan(in);
  EXPECT_DOUBLE_EQ(p.checkpoint_snapshot, 14e9);
  EXPECT_DOUBLE_EQ(p.host_bytes_per_rank, 14e9);
  EXPECT_DOUBLE_EQ(p.host_bytes_per_node, 8 * 14e9);
  const Diagnostics d = preflight(p, f, "");
  ASSERT_EQ(d.error_count(), 1u) << d.format();
  const Diagnostic& e = d.all()[0];
  EXPECT_EQ(e.path, "--save");
  EXPECT_EQ(e.value, "/ckpt/run1");
  EXPECT_EQ(e.message, "the checkpoint snapshot (--save) needs 104.3 GiB of host RAM for 7.0B params at world size 8; "
                       "this host has 31.2 GiB available");
  EXPECT_NE(e.fix.find("run at most 2 rank(s) per node"), std::string::npos) << e.fix;
  EXPECT_EQ(e.fix, "each of the 8 rank(s) on this node keeps 13.0 GiB in host RAM; run at most 2 rank(s) per node (or "
                   "spread the job over more nodes) or run without --save (a background save copies each rank's master "
                   "and moments, 13.0 GiB per rank, into host RAM so that training goes on while the file is written)");
  EXPECT_EQ(e.fix.find("nvme"), std::string::npos) << e.fix;
  // Beside CPU offload both are named, the offload key first.
  in.offload_optimizer = OffloadDevice::CPU;
  const Diagnostics both = preflight(make_memory_plan(in), f, "");
  ASSERT_EQ(both.error_count(), 1u) << both.format();
  EXPECT_EQ(both.all()[0].path, "zero_optimization.offload_optimizer.device");
  EXPECT_EQ(both.all()[0].message.rfind("offload_optimizer=cpu + the checkpoint snapshot (--save) need ", 0), 0u)
      << both.all()[0].message;
  EXPECT_NE(both.all()[0].fix.find(", offload to \"nvme\" with a local nvme_path or run without --save ("), std::string::npos)
      << both.all()[0].fix;
  // MiCS over 4 of a node's 8 ranks: only the first shard group owns (and snapshots) the state.
  in.offload_optimizer = OffloadDevice::None;
  in.stage = 3;
  in.mics_shard_size = 4;
  in.checkpoint_snapshot_bytes = uint64_t(16) * 7'000'000'000 / 4;
  const MemoryPlan mics = make_memory_plan(in);
  EXPECT_EQ(mics.snapshot_owners_on_node, 4);
  EXPECT_DOUBLE_EQ(mics.host_bytes_per_node, 4 * 28e9);
}

// On the CPU backend the snapshot is one more remedy, and each rank's own share counts it.
TEST(Preflight, CpuBackendOffersRunningWithoutSave) {
  PlanInput in;
  in.params = 1'000'000'000;
  in.world_size = 2;
  in.ranks_per_node = 2;
  in.stage = 1;
  in.precision = DType::F32;
  in.backend_is_host = true;
  in.checkpoint_snapshot_bytes = uint64_t(12) * 1'000'000'000 / 2;  // 5.6 GiB per rank
  in.save_dir = "ck";
  const Diagnostics d = preflight(make_memory_plan(in), host_with(16), "");
  ASSERT_EQ(d.error_count(), 1u) << d.format();
  const Diagnostic& e = d.all()[0];
  EXPECT_NE(e.message.find("; the checkpoint snapshot (--save) 11.2 GiB per node"), std::string::npos) << e.message;
  EXPECT_NE(e.fix.find("run without --save (a background save copies each rank's master and moments, 5.6 GiB per rank"),
            std::string::npos) << e.fix;
}

// Beside a GPU with no offload and no --save, the communicator's (capped) buffers alone: the verb
// agrees, the key is the cap's variable, and no clause is left dangling.
TEST(Preflight, CommunicatorBuffersAloneNameTheirCap) {
  PlanInput in;
  in.params = 124'000'000;
  in.world_size = 8;
  in.ranks_per_node = 8;
  in.stage = 2;
  in.comm_buffer_bytes = 64ull << 20;
  MachineFacts f = host_with(0.25);
  f.gpu_free = uint64_t(70 * kGiB);
  f.gpu_total = uint64_t(80 * kGiB);
  const Diagnostics d = preflight(make_memory_plan(in), f, "");
  ASSERT_EQ(d.error_count(), 1u) << d.format();
  const Diagnostic& e = d.all()[0];
  EXPECT_EQ(e.path, "ZT_COMM_BUFFER_MB");
  EXPECT_EQ(e.message.rfind("the communicator's buffers need 0.5 GiB of host RAM", 0), 0u) << e.message;
  EXPECT_EQ(e.fix, "each of the 8 rank(s) on this node keeps 0.1 GiB in host RAM; run at most 4 rank(s) per node (or spread "
                   "the job over more nodes) or lower ZT_COMM_BUFFER_MB (the communicator's buffers are 0.1 GiB per rank)");
}

TEST(Preflight, SmallPlanPassesSilently) {
  PlanInput in;
  in.params = 124'000'000;
  in.world_size = 2;
  in.ranks_per_node = 2;
  in.stage = 2;
  in.precision = DType::BF16;
  in.offload_optimizer = OffloadDevice::CPU;
  const Diagnostics d = preflight(make_memory_plan(in), host_with(31.2), "");
  EXPECT_EQ(d.all().size(), 0u) << d.format();
}

TEST(Preflight, CpuBackendCountsDeviceBytesAgainstHostRam) {
  PlanInput in;
  in.params = 7'000'000'000;
  in.world_size = 4;
  in.ranks_per_node = 4;
  in.stage = 0;
  in.precision = DType::F32;
  const MemoryPlan p = make_memory_plan(in);
  const Diagnostics d = preflight(p, host_with(31.2), "");  // no GPU in the facts
  ASSERT_EQ(d.error_count(), 1u) << d.format();
  EXPECT_EQ(d.all()[0].message.rfind("CPU backend: 4 rank(s) on this node need ", 0), 0u) << d.all()[0].message;
  EXPECT_NE(d.all()[0].message.find("this host has 31.2 GiB available"), std::string::npos);
  EXPECT_NE(d.all()[0].fix.find("raise zero_optimization.stage"), std::string::npos);
  // The same plan with a GPU is checked against the GPU instead.
  MachineFacts f = host_with(31.2);
  f.gpu_free = uint64_t(10 * kGiB);
  f.gpu_total = uint64_t(80 * kGiB);
  const Diagnostics g = preflight(p, f, "");
  ASSERT_EQ(g.error_count(), 1u) << g.format();
  EXPECT_EQ(g.all()[0].message.rfind("ZeRO stage 0 needs ", 0), 0u) << g.all()[0].message;
  EXPECT_NE(g.all()[0].message.find("this GPU has 10.0 GiB free of 80.0 GiB"), std::string::npos);
}

// The fix named first addresses the largest term: activations before a higher stage when they
// dominate, and never a higher stage at world size 1 (every stage keeps the whole model there).
TEST(Preflight, FixHintsLargestTermFirst) {
  PlanInput in;
  in.params = 124'000'000;
  in.world_size = 1;
  in.ranks_per_node = 1;
  in.stage = 3;
  in.precision = DType::F32;
  in.micro_batch = 64, in.seq_len = 1024, in.hidden = 768, in.layers = 12, in.heads = 12, in.vocab = 50304;
  in.activation_bytes = 140e9;  // about what gpt2-124m keeps for 64 × 1024 tokens in fp32
  const MemoryPlan p = make_memory_plan(in);
  ASSERT_GT(p.device_activations, p.device_model_states());
  const Diagnostics d = preflight(p, host_with(4), "");
  ASSERT_EQ(d.error_count(), 1u) << d.format();
  const std::string& fix = d.all()[0].fix;
  EXPECT_EQ(fix.rfind("lower train_micro_batch_size_per_gpu (activations are ", 0), 0u) << fix;
  EXPECT_NE(fix.find("activation checkpointing (--recompute)"), std::string::npos) << fix;
  EXPECT_EQ(fix.find("raise zero_optimization.stage"), std::string::npos) << fix;
  EXPECT_NE(fix.find("add ranks"), std::string::npos) << fix;
  // World size 8, stage 0, no activations in the plan: the model states dominate and stage 3
  // divides them by 8, so that comes first.
  PlanInput big;
  big.params = 7'000'000'000;
  big.world_size = 8;
  big.ranks_per_node = 1;
  big.stage = 0;
  big.precision = DType::F32;
  const Diagnostics g = preflight(make_memory_plan(big), host_with(31.2), "");
  ASSERT_EQ(g.error_count(), 1u) << g.format();
  EXPECT_EQ(g.all()[0].fix.rfind("raise zero_optimization.stage to 3 (it keeps 1/8 of the params, grads and optimizer "
                                 "state per rank: ", 0), 0u) << g.all()[0].fix;
}

TEST(Preflight, NvmeSpaceAndPath) {
  PlanInput in;
  in.params = 100'000'000'000'000;  // 100T params: no disk here holds the optimizer state
  in.world_size = 8;
  in.ranks_per_node = 8;
  in.stage = 3;
  in.precision = DType::BF16;
  in.offload_optimizer = OffloadDevice::NVMe;
  const MemoryPlan p = make_memory_plan(in);
  MachineFacts f = host_with(1e9);  // plenty of RAM: only the disk check speaks
  f.gpu_free = f.gpu_total = uint64_t(1e9 * kGiB);

  Diagnostics d = preflight(p, f, "/tmp");
  ASSERT_EQ(d.error_count(), 1u) << d.format();
  EXPECT_EQ(d.all()[0].path, "zero_optimization.offload_optimizer.nvme_path");
  EXPECT_EQ(d.all()[0].message.rfind("offload to nvme needs ", 0), 0u) << d.all()[0].message;
  EXPECT_NE(d.all()[0].message.find("file system has"), std::string::npos);

  d = preflight(p, f, "/no/such/nvme");
  ASSERT_EQ(d.error_count(), 1u);
  EXPECT_NE(d.all()[0].message.find("No such file or directory"), std::string::npos);
  d = preflight(p, f, "");
  ASSERT_EQ(d.error_count(), 1u);
  EXPECT_NE(d.all()[0].message.find("no nvme_path is set"), std::string::npos);

  // A small NVMe plan fits in /tmp.
  in.params = 1'000'000;
  EXPECT_EQ(preflight(make_memory_plan(in), f, "/tmp").error_count(), 0u);
}

// Below a gigabyte the NVMe messages print MiB/KiB, never "needs 0.0 GiB" (issue 15).
TEST(Preflight, NvmeSpaceMessagesUseUnitsThatFitTheNumber) {
  PlanInput in;
  in.params = 1'000'000;
  in.world_size = 1;
  in.ranks_per_node = 1;
  in.stage = 3;
  in.precision = DType::BF16;
  in.offload_optimizer = OffloadDevice::NVMe;
  const MemoryPlan p = make_memory_plan(in);
  ASSERT_GT(p.nvme_bytes_per_node, 1024.0 * 1024.0);
  ASSERT_LT(p.nvme_bytes_per_node, 1024.0 * 1024.0 * 1024.0);
  MachineFacts f = host_with(1e9);
  f.gpu_free = f.gpu_total = uint64_t(1e9 * kGiB);
  for (const std::string path : {"", "/no/such/nvme"}) {
    const Diagnostics d = preflight(p, f, path);
    ASSERT_EQ(d.error_count(), 1u) << d.format();
    const std::string& m = d.all()[0].message;
    char expect[32];
    std::snprintf(expect, sizeof expect, "%.1f MiB", p.nvme_bytes_per_node / (1024.0 * 1024.0));
    EXPECT_NE(m.find(expect), std::string::npos) << m;
    EXPECT_EQ(m.find("GiB"), std::string::npos) << m;
  }
}

TEST(Preflight, UnknownHostRamIsAWarningNotASilentPass) {
  const Diagnostics d = preflight(make_memory_plan(seven_b_offload()), MachineFacts{}, "");
  EXPECT_EQ(d.error_count(), 0u);
  EXPECT_EQ(d.warning_count(), 1u);
}

}  // namespace
}  // namespace zt
