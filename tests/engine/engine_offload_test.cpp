// Offload in the engine (run at 1 and 2 ranks): stages 1–3 × offload_optimizer {none, cpu, nvme},
// stage 3 × ratio, and stage 3 × offload_param {none, nvme}, give the same consolidated parameters
// and losses for fp32 and emulated bf16, with several sub-groups, transfer chunks and buffers; the
// ledger shows where the state went. A missing nvme_path stops the engine with the path.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "runtime/plan/memory_plan.h"
#include "tests/engine/engine_test_util.h"

namespace zt::test {
namespace {

std::string swap_dir() {
  // Per-rank processes share the folder; the swapper names files by rank and pid.
  const char* base = std::getenv("TMPDIR");
  return base && *base ? base : "/tmp";
}

std::string prec_name(DType p) { return p == DType::F32 ? "fp32" : "bf16"; }

TEST(EngineOffload, CpuOffloadGivesTheSameTrainingAsNone) {
  // The state moves to host memory apart from the backend's; gradients are copied out and working
  // params copied in through the pinned ring on the backend's copy lane (a thread on the CPU
  // backend, so a missing wait would race). Small chunks put many chunk boundaries inside units.
  for (DType prec : {DType::F32, DType::BF16}) {
    for (int stage = 1; stage <= 3; ++stage) {
      EngineOptions o = base_options(stage, 2, prec, true);
      o.sub_group_size = 1000;
      const RunResult none = run_engine(tiny_model(), o, 4);
      for (int64_t chunk : {int64_t(333), int64_t(1) << 22}) {
        for (int buffers : {2, 4}) {
          SCOPED_TRACE(prec_name(prec) + " stage " + std::to_string(stage) + " chunk " + std::to_string(chunk) +
                       " buffers " + std::to_string(buffers));
          o.zero.offload_optimizer = OffloadDevice::CPU;
          o.offload.chunk_elems = chunk;
          o.offload.state.buffer_count = buffers;
          const RunResult cpu = run_engine(tiny_model(), o, 4);
          EXPECT_EQ(cpu.summary.checksum, none.summary.checksum);
          EXPECT_EQ(cpu.losses, none.losses);
          EXPECT_EQ(cpu.norms, none.norms);
          // Master and moments left backend memory; the host holds the same moments and a master.
          EXPECT_EQ(cpu.resident[MemCategory::Master], 0u);
          EXPECT_EQ(cpu.resident[MemCategory::Optimizer], 0u);
          EXPECT_EQ(cpu.host[MemCategory::Optimizer], none.resident[MemCategory::Optimizer]);
          EXPECT_EQ(cpu.host[MemCategory::Master] * 2, cpu.host[MemCategory::Optimizer]);
          EXPECT_GT(cpu.host[MemCategory::CommBuffers], 0u) << "gradient copies and the ring";
          // The reduced gradient shard stays on the backend (it is copied out from there): the
          // plan counts it as without offload.
          EXPECT_EQ(cpu.resident[MemCategory::Grads], none.resident[MemCategory::Grads]);
          PlanInput in;
          in.params = tiny_model().total_params();
          in.world_size = world().comm->world_size();
          in.stage = stage;
          in.emulates_16bit_in_fp32 = true;
          in.precision = prec;
          in.offload_optimizer = OffloadDevice::CPU;
          const MemoryPlan plan = make_memory_plan(in);
          EXPECT_NEAR(double(cpu.resident[MemCategory::Grads]), plan.device_grads, 4.0 * 64 * in.world_size + 1);
        }
      }
    }
  }
}

TEST(EngineOffload, CpuOffloadOfSgdAndLamb) {
  // SGD (with momentum) and Lamb step on the host through the same copy-out / copy-in path.
  for (OptimizerType type : {OptimizerType::SGD, OptimizerType::Lamb}) {
    SCOPED_TRACE(optimizer_type_name(type));
    EngineOptions o = base_options(2, 1, DType::BF16, false);
    o.optimizer.type = type;
    o.optimizer.momentum = 0.9;
    o.offload.chunk_elems = 500;
    const RunResult none = run_engine(tiny_model(), o, 3);
    o.zero.offload_optimizer = OffloadDevice::CPU;
    const RunResult cpu = run_engine(tiny_model(), o, 3);
    EXPECT_EQ(cpu.summary.checksum, none.summary.checksum);
    EXPECT_EQ(cpu.losses, none.losses);
  }
}

TEST(EngineOffload, RatioKeepsPartOfTheStateInBackendMemory) {
  for (DType prec : {DType::F32, DType::BF16}) {
    EngineOptions o = base_options(3, 1, prec, true);
    o.gather.persistence_threshold = 0;
    const RunResult none = run_engine(tiny_model(), o, 3);
    const uint64_t total = none.resident[MemCategory::Optimizer];
    uint64_t previous_host = 0;
    for (double ratio : {0.3, 0.6, 1.0}) {
      SCOPED_TRACE(prec_name(prec) + " ratio " + std::to_string(ratio));
      o.zero.offload_optimizer = OffloadDevice::CPU;
      o.zero.offload_ratio = ratio;
      o.offload.chunk_elems = 700;
      const RunResult part = run_engine(tiny_model(), o, 3);
      EXPECT_EQ(part.summary.checksum, none.summary.checksum);
      EXPECT_EQ(part.losses, none.losses);
      const uint64_t host = part.host[MemCategory::Optimizer], dev = part.resident[MemCategory::Optimizer];
      EXPECT_EQ(host + dev, total) << "every moment is on one side";
      EXPECT_GE(double(host), ratio * double(total)) << "at least the ratio's share is offloaded";
      if (ratio < 1.0) EXPECT_GT(dev, 0u) << "some state stays in backend memory";
      EXPECT_GT(host, previous_host) << "a larger ratio offloads more";
      previous_host = host;
    }
  }
}

TEST(EngineOffload, RatioBelowOneIsRefusedWhereItCannotApply) {
  auto message = [](EngineOptions o) -> std::string {
    try {
      run_engine(tiny_model(), o, 1);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  EngineOptions o = base_options(2, 1, DType::F32, false);
  o.zero.offload_optimizer = OffloadDevice::CPU;
  o.zero.offload_ratio = 0.5;
  EXPECT_NE(message(o).find("stage 3"), std::string::npos) << message(o);
  o.zero.stage = 3;
  o.optimizer.type = OptimizerType::SGD;
  EXPECT_NE(message(o).find("only Adam/AdamW"), std::string::npos) << message(o);
}

TEST(EngineOffload, NvmeOffloadGivesTheSameTrainingAsNone) {
  for (DType prec : {DType::F32, DType::BF16}) {
    for (int stage = 1; stage <= 3; ++stage) {
      SCOPED_TRACE(prec_name(prec) + " stage " + std::to_string(stage));
      EngineOptions o = base_options(stage, 1, prec, true);
      o.sub_group_size = 1000;  // several sub-groups per unit
      const RunResult none = run_engine(tiny_model(), o, 4);
      for (int buffers : {1, 4}) {
        o.zero.offload_optimizer = OffloadDevice::NVMe;
        o.offload.state.nvme_path = swap_dir();
        o.offload.state.buffer_count = buffers;
        const RunResult nvme = run_engine(tiny_model(), o, 4);
        EXPECT_EQ(nvme.summary.checksum, none.summary.checksum) << buffers << " buffers";
        EXPECT_EQ(nvme.losses, none.losses) << buffers << " buffers";
        EXPECT_EQ(nvme.resident[MemCategory::Master], 0u);
        EXPECT_EQ(nvme.resident[MemCategory::Optimizer], 0u);
        // Only the swap buffers stay in (host) memory: one record of the largest sub-group (master
        // and two moments) per buffer, rounded up to the 4096-byte direct-I/O alignment.
        const uint64_t record = (3000ull * 4 + 4095) / 4096 * 4096;
        EXPECT_EQ(nvme.host[MemCategory::Optimizer], uint64_t(buffers) * record) << buffers << " buffers";
        EXPECT_EQ(nvme.host[MemCategory::Master], 0u);
      }
    }
  }
}

TEST(EngineOffload, NvmeRecordsForSgdWithAndWithoutMomentum) {
  // SGD keeps one moment (with momentum) or none; the master is paged with it.
  for (DType prec : {DType::F32, DType::BF16}) {
    for (double momentum : {0.0, 0.9}) {
      SCOPED_TRACE(prec_name(prec) + " momentum " + std::to_string(momentum));
      EngineOptions o = base_options(2, 1, prec, true);
      o.optimizer.type = OptimizerType::SGD;
      o.optimizer.lr = 0.05;
      o.optimizer.momentum = momentum;
      o.sub_group_size = 700;
      const RunResult none = run_engine(tiny_model(), o, 3);
      o.zero.offload_optimizer = OffloadDevice::NVMe;
      o.offload.state.nvme_path = swap_dir();
      const RunResult nvme = run_engine(tiny_model(), o, 3);
      EXPECT_EQ(nvme.summary.checksum, none.summary.checksum);
      const uint64_t record = ((momentum != 0.0 ? 2 : 1) * 700ull * 4 + 4095) / 4096 * 4096;
      EXPECT_EQ(nvme.host[MemCategory::Optimizer], 4 * record);
    }
  }
}

TEST(EngineOffload, Stage3ParamOffloadGivesTheSameTraining) {
  // Each unit's parameter shard lives in pinned host memory (cpu) or a swap file (nvme) and is
  // copied into backend memory just before its all-gather; × optimizer state in backend memory,
  // on the host or on NVMe; fp32 and bf16; prefetch on and off.
  for (DType prec : {DType::F32, DType::BF16}) {
    for (bool overlap : {false, true}) {
      EngineOptions o = base_options(3, 1, prec, overlap);
      o.gather.persistence_threshold = 0;
      o.gather.max_reuse_distance = 0;
      o.sub_group_size = 900;
      o.offload.chunk_elems = 600;
      const RunResult none = run_engine(tiny_model(), o, 3);
      for (OffloadDevice param : {OffloadDevice::CPU, OffloadDevice::NVMe}) {
        for (OffloadDevice state : {OffloadDevice::None, OffloadDevice::CPU, OffloadDevice::NVMe}) {
          SCOPED_TRACE(prec_name(prec) + (overlap ? " overlap" : " inline") + " param " +
                       offload_name(param) + " optimizer " + offload_name(state));
          o.zero.offload_param = param;
          o.offload.params.nvme_path = swap_dir();
          o.zero.offload_optimizer = state;
          o.offload.state.nvme_path = swap_dir();
          const RunResult off = run_engine(tiny_model(), o, 3);
          EXPECT_EQ(off.summary.checksum, none.summary.checksum);
          EXPECT_EQ(off.losses, none.losses);
          EXPECT_EQ(off.resident[MemCategory::Params], 0u) << "no parameter shard stays in backend memory";
          if (param == OffloadDevice::CPU)
            EXPECT_EQ(off.host[MemCategory::Params], none.resident[MemCategory::Params]) << "the shards, on the host";
          else
            EXPECT_EQ(off.host[MemCategory::Params], 0u);
        }
      }
      o.offload = OffloadOptions{};
    }
  }
}

TEST(EngineOffload, ParamBufferSizeMustHoldEveryShard) {
  EngineOptions o = base_options(3, 1, DType::F32, false);
  o.zero.offload_param = OffloadDevice::NVMe;
  o.offload.params.nvme_path = swap_dir();
  o.offload.params.buffer_size = 100;
  try {
    run_engine(tiny_model(), o, 1);
    FAIL() << "expected a refusal: the tiny model's shards exceed 100 elements";
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("offload_param.buffer_size = 100 elements"), std::string::npos) << m;
    EXPECT_NE(m.find("raise zero_optimization.offload_param.buffer_size to at least"), std::string::npos) << m;
  }
  o.offload.params.buffer_size = 100000000;
  o.offload.params.buffer_count = 1;  // one buffer reused for every read and write
  const RunResult one = run_engine(tiny_model(), o, 2);
  o.zero.offload_param = OffloadDevice::None;
  EXPECT_EQ(one.summary.checksum, run_engine(tiny_model(), o, 2).summary.checksum);
}

TEST(EngineOffload, MissingNvmePathStopsWithThePath) {
  EngineOptions o = base_options(2, 1, DType::F32, false);
  o.zero.offload_optimizer = OffloadDevice::NVMe;
  o.offload.state.nvme_path = "/nonexistent/zerotrain-swap";
  try {
    run_engine(tiny_model(), o, 1);
    FAIL() << "expected the engine to refuse a missing nvme_path";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/zerotrain-swap"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace zt::test
