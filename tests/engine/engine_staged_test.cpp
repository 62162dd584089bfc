// The engine over the host-staged communicator (the path of GPU ranks that share a device over
// MPI), here on the CPU backend's memory with staging slots small enough that every block's
// collectives are cut into several: stages 0–3 train bitwise as over plain MPI with the same bytes
// per step, and between steps the ledger's communicator buffers are the staged communicator's
// reservation (the inner pack and receive buffers and the two slots), which never exceeds its cap.
#include <gtest/gtest.h>

#include <memory>
#include <utility>

#include "collectives/comm_options.h"
#include "collectives/host_staged_communicator.h"
#include "collectives/mpi_communicator.h"
#include "tests/engine/engine_test_util.h"

namespace zt::test {
namespace {

constexpr uint64_t kCap = uint64_t(1) << 20;  // slots of 512 KiB: a block of `small` is ~0.8 MB

// Puts `c` in place of the test world's communicator for the scope.
class CommSwap {
 public:
  explicit CommSwap(std::unique_ptr<Communicator> c) : kept_(std::move(world().comm)) { world().comm = std::move(c); }
  ~CommSwap() { world().comm = std::move(kept_); }

 private:
  std::unique_ptr<Communicator> kept_;
};

class Staged : public ::testing::TestWithParam<int> {};

TEST_P(Staged, TrainsBitwiseAsPlainMpiWithinItsCap) {
  const int stage = GetParam();
  const ModelConfig model = *model_preset("small");
  EngineOptions o = base_options(stage, 1, DType::F32, true);
  o.reduce.bucket_elems = 500000000;  // whole-unit calls, larger than a slot
  o.gather.allgather_bucket_size = 500000000;
  const CommOp grad_op = stage == 0 ? CommOp::AllReduce : CommOp::ReduceScatter;
  const uint64_t calls_before = world().comm->stats()[grad_op].calls;
  const RunResult plain = run_engine(model, o, 2);
  const uint64_t plain_calls = world().comm->stats()[grad_op].calls - calls_before;

  CommOptions options = CommOptions::from_env();
  options.buffer_bytes = kCap;
  options.timeout_s = 120;
  offload::PinnedAllocatorOptions pin;
  pin.pin_memory = false;  // the CPU backend's memory is host memory already
  auto owned = std::make_unique<HostStagedCommunicator>(std::make_unique<MpiCommunicator>(*world().boot, options),
                                                        *world().backend, pin, kCap);
  HostStagedCommunicator& staged = *owned;
  CommSwap swap(std::move(owned));
  const RunResult r = run_engine(model, o, 2);
  ASSERT_EQ(r.losses.size(), plain.losses.size());
  for (size_t s = 0; s < r.losses.size(); ++s) {
    EXPECT_EQ(r.losses[s], plain.losses[s]) << "step " << s;
    EXPECT_EQ(r.norms[s], plain.norms[s]) << "step " << s;
    for (int op = 0; op < kCommOpCount; ++op)
      EXPECT_EQ(r.stats[s].comm_bytes[op], plain.stats[s].comm_bytes[op]) << "step " << s << " op " << op;
  }
  EXPECT_EQ(r.summary.checksum, plain.summary.checksum);
  EXPECT_GE(staged.stats()[grad_op].calls, plain_calls + 2 * uint64_t(model.layers))
      << "each block's gradient call, in each of the two steps, must have been cut into at least two";

  Engine probe(model, o, *world().backend, *world().comm);
  EXPECT_EQ(staged.staging_bytes(), kCap) << "two slots of half the cap: the model is larger than both";
  EXPECT_EQ(staged.buffer_bytes(), 2 * kCap) << "the inner communicator's two buffers and the two slots";
  EXPECT_EQ(probe.ledger().current()[MemCategory::CommBuffers], staged.buffer_bytes())
      << "between steps the ledger's buffers are the communicator's reservation";
}

INSTANTIATE_TEST_SUITE_P(Stages, Staged, ::testing::Values(0, 1, 2, 3));

}  // namespace
}  // namespace zt::test
