// Offload in the engine (run at 1 and 2 ranks): stages 1–3 × offload_optimizer {none, nvme}, and
// stage 3 × offload_param {none, nvme}, give the same consolidated parameters, for fp32 (master aliased to the working params: only
// the moments are paged) and emulated bf16 (master weights paged too), with several sub-groups and
// 1 or 4 swap buffers. A missing nvme_path stops the engine with the path in the message.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/engine/engine_test_util.h"

namespace zt::test {
namespace {

std::string swap_dir() {
  // Per-rank processes share the folder; the swapper names files by rank and pid.
  const char* base = std::getenv("TMPDIR");
  return base && *base ? base : "/tmp";
}

TEST(EngineOffload, NvmeOffloadGivesTheSameTrainingAsNone) {
  for (Precision prec : {Precision::FP32, Precision::BF16}) {
    for (int stage = 1; stage <= 3; ++stage) {
      SCOPED_TRACE(std::string(prec == Precision::FP32 ? "fp32" : "bf16") + " stage " + std::to_string(stage));
      EngineOptions o = base_options(stage, 1, prec, true);
      o.sub_group_size = 1000;  // several sub-groups per unit
      const RunResult none = run_engine(tiny_model(), o, 4);
      // (offload_optimizer "cpu" is not run here: on the CPU backend the state is in host memory
      // either way, so the engine treats it exactly like "none".)
      for (int buffers : {1, 4}) {
        o.offload.optimizer = OffloadDevice::NVMe;
        o.offload.nvme_path = swap_dir();
        o.offload.buffer_count = buffers;
        const RunResult nvme = run_engine(tiny_model(), o, 4);
        EXPECT_EQ(nvme.summary.checksum, none.summary.checksum) << buffers << " buffers";
        EXPECT_EQ(nvme.losses, none.losses) << buffers << " buffers";
        EXPECT_EQ(nvme.resident[MemCategory::Master], 0u);
        // Only the swap buffers stay in memory: one record of the largest sub-group (moments, plus
        // the master when not aliased) per buffer, rounded up to the 4096-byte direct-I/O alignment.
        const uint64_t floats = 1000ull * (prec == Precision::FP32 ? 2 : 3);
        const uint64_t record = (floats * 4 + 4095) / 4096 * 4096;
        EXPECT_EQ(nvme.resident[MemCategory::Optimizer], uint64_t(buffers) * record) << buffers << " buffers";
      }
    }
  }
}

TEST(EngineOffload, NvmeRecordsForSgdWithAndWithoutMomentum) {
  // SGD keeps one moment (with momentum) or none; bf16 pages the master too, fp32 aliases it (and
  // plain fp32 SGD has nothing to page, so no swap file is made).
  for (Precision prec : {Precision::FP32, Precision::BF16}) {
    for (double momentum : {0.0, 0.9}) {
      SCOPED_TRACE(std::string(prec == Precision::FP32 ? "fp32" : "bf16") + " momentum " + std::to_string(momentum));
      EngineOptions o = base_options(2, 1, prec, true);
      o.optimizer.type = OptimizerType::SGD;
      o.optimizer.lr = 0.05;
      o.optimizer.momentum = momentum;
      o.sub_group_size = 700;
      const RunResult none = run_engine(tiny_model(), o, 3);
      o.offload.optimizer = OffloadDevice::NVMe;
      o.offload.nvme_path = swap_dir();
      const RunResult nvme = run_engine(tiny_model(), o, 3);
      EXPECT_EQ(nvme.summary.checksum, none.summary.checksum);
      const bool nothing_to_page = prec == Precision::FP32 && momentum == 0.0;
      if (nothing_to_page) EXPECT_EQ(nvme.resident[MemCategory::Optimizer], 0u);
      else EXPECT_GT(nvme.resident[MemCategory::Optimizer], 0u);
    }
  }
}

TEST(EngineOffload, Stage3ParamsOnNvmeGiveTheSameTraining) {
  // Each unit's parameter shard lives in a swap file and is read back just before its all-gather;
  // with and without the optimizer state on NVMe too, fp32 and bf16, prefetch on and off.
  for (Precision prec : {Precision::FP32, Precision::BF16}) {
    for (bool overlap : {false, true}) {
      SCOPED_TRACE(std::string(prec == Precision::FP32 ? "fp32" : "bf16") + (overlap ? " overlap" : " inline"));
      EngineOptions o = base_options(3, 1, prec, overlap);
      o.param_persistence_threshold = 0;
      o.max_reuse_distance = 0;
      o.sub_group_size = 900;
      const RunResult none = run_engine(tiny_model(), o, 3);
      o.offload.param = OffloadDevice::NVMe;
      o.offload.param_nvme_path = swap_dir();
      const RunResult params = run_engine(tiny_model(), o, 3);
      EXPECT_EQ(params.summary.checksum, none.summary.checksum);
      EXPECT_EQ(params.losses, none.losses);
      EXPECT_EQ(params.resident[MemCategory::Params], 0u) << "no parameter shard stays in memory";
      o.offload.optimizer = OffloadDevice::NVMe;
      o.offload.nvme_path = swap_dir();
      const RunResult both = run_engine(tiny_model(), o, 3);
      EXPECT_EQ(both.summary.checksum, none.summary.checksum);
    }
  }
}

TEST(EngineOffload, MissingNvmePathStopsWithThePath) {
  EngineOptions o = base_options(2, 1, Precision::FP32, false);
  o.offload.optimizer = OffloadDevice::NVMe;
  o.offload.nvme_path = "/nonexistent/zerotrain-swap";
  try {
    run_engine(tiny_model(), o, 1);
    FAIL() << "expected the engine to refuse a missing nvme_path";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/zerotrain-swap"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace zt::test
