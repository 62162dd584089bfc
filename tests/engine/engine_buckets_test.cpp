// Buckets change how gradients and parameters travel, never what training computes: every
// reduce_bucket_size / allgather_bucket_size (1 element, odd, smaller than a tensor, larger than a
// unit, spanning units, the whole model) gives the same losses, norms and parameters bit for bit,
// and the collective calls each step issues are the bucket arithmetic computed here from the layout.
// Also: on the CPU backend a run without offload copies no gradient byte to the host.
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/engine/engine_test_util.h"

namespace zt::test {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct Layout {
  int64_t total_padded = 0;   // the bucket stream: every unit's padded buffer
  int64_t largest_tensor = 0;
  int64_t largest_unit = 0;   // padded
};

Layout layout_of(const ModelConfig& model, const EngineOptions& o) {
  Engine probe(model, o, *world().backend, *world().comm);
  const ShardMap& m = probe.shard_map();
  Layout l;
  l.total_padded = m.total_padded();
  l.largest_unit = m.max_unit_padded();
  for (int u = 0; u < m.units(); ++u)
    for (const auto& t : m.unit(u).tensors) l.largest_tensor = std::max(l.largest_tensor, t.size);
  return l;
}

// The bucket sizes the issue names, derived from the layout so that each means what it says.
std::vector<int64_t> bucket_sizes(const Layout& l) {
  return {1, 7, l.largest_tensor / 2 + 1, l.largest_unit + 1, l.largest_unit * 2 + 3, 500000000};
}

// Collective calls that are not gradient or parameter buckets: the step's loss (an all-gather of
// one double per rank) and, for stages 1–3, the gradient norm's partials (another). None at one rank.
int64_t control_gathers(int stage) {
  if (world().comm->world_size() == 1) return 0;
  return stage == 0 ? 1 : 2;
}

class Buckets : public ::testing::TestWithParam<int> {};

TEST_P(Buckets, ReduceBucketSizeNeverChangesTrainingAndCallsAreTheArithmetic) {
  const int stage = GetParam();
  const int accum = 3;  // the global batch of 12 splits at 1, 2 and 4 ranks
  const ModelConfig model = tiny_model(/*tied=*/false);
  EngineOptions o = base_options(stage, accum, DType::F32, true);
  o.gather.persistence_threshold = 0;
  o.gather.max_reuse_distance = 0;
  o.gather.allgather_bucket_size = 500000000;
  const Layout l = layout_of(model, o);
  ASSERT_GT(l.largest_tensor, 2);
  const int W = world().comm->world_size();
  const CommOp grad_op = stage == 0 ? CommOp::AllReduce : CommOp::ReduceScatter;
  // Stages 2–3 reduce every micro-step; stages 0–1 once, at the accumulation boundary.
  const int64_t reductions = stage >= 2 ? accum : 1;

  o.reduce.bucket_elems = 500000000;
  const RunResult ref = run_engine(model, o, 2);
  for (const int64_t b : bucket_sizes(l)) {
    o.reduce.bucket_elems = b;
    if (b == 1 && W > 2) continue;  // one call per element: the 1- and 2-rank runs cover it
    const RunResult r = run_engine(model, o, 2);
    SCOPED_TRACE("stage " + std::to_string(stage) + ", reduce_bucket_size " + std::to_string(b));
    EXPECT_EQ(r.summary.checksum, ref.summary.checksum);
    EXPECT_EQ(r.losses, ref.losses);
    EXPECT_EQ(r.norms, ref.norms);
    const int64_t buckets = ceil_div(l.total_padded, b);
    for (const StepStats& st : r.stats) {
      EXPECT_EQ(int64_t(st.comm_calls[int(grad_op)]), buckets * reductions);
      EXPECT_EQ(st.comm_bytes[int(grad_op)], ref.stats[0].comm_bytes[int(grad_op)]) << "the same bytes, cut otherwise";
    }
  }
}

// allgather_bucket_size cuts the stage 1–2 post-step gather (stage 3 gathers unit by unit).
class GatherBuckets : public ::testing::TestWithParam<int> {};

TEST_P(GatherBuckets, AllgatherBucketSizeNeverChangesTrainingAndCallsAreTheArithmetic) {
  const int stage = GetParam();
  const ModelConfig model = tiny_model(/*tied=*/false);
  EngineOptions o = base_options(stage, 1, DType::F32, true);
  const Layout l = layout_of(model, o);
  const int W = world().comm->world_size();
  o.gather.allgather_bucket_size = 500000000;
  const RunResult ref = run_engine(model, o, 2);
  for (const int64_t b : bucket_sizes(l)) {
    if (b == 1 && W > 2) continue;
    o.gather.allgather_bucket_size = b;
    const RunResult r = run_engine(model, o, 2);
    SCOPED_TRACE("stage " + std::to_string(stage) + ", allgather_bucket_size " + std::to_string(b));
    EXPECT_EQ(r.summary.checksum, ref.summary.checksum);
    EXPECT_EQ(r.losses, ref.losses);
    const int64_t buckets = ceil_div(l.total_padded, b);
    for (const StepStats& st : r.stats)
      EXPECT_EQ(int64_t(st.comm_calls[int(CommOp::AllGather)]), buckets + control_gathers(stage));
  }
}

TEST_P(Buckets, NoGradientByteLeavesTheBackendWithoutOffload) {
  const int stage = GetParam();
  const ModelConfig model = tiny_model();
  EngineOptions o = base_options(stage, 1, DType::BF16, true);
  const RunResult plain = run_engine(model, o, 2);
  for (const StepStats& st : plain.stats) EXPECT_EQ(st.grad_bytes_to_host, 0u) << "stage " << stage;
  if (stage == 0) return;  // offload needs a partitioned optimizer
  o.zero.offload_optimizer = OffloadDevice::CPU;
  const RunResult off = run_engine(model, o, 2);
  // Offload copies this rank's reduced gradient shard out: bf16 elements of every owned range.
  for (const StepStats& st : off.stats) EXPECT_GT(st.grad_bytes_to_host, 0u) << "stage " << stage;
  EXPECT_EQ(off.summary.checksum, plain.summary.checksum) << "offload computes the same update, stage " << stage;
}

INSTANTIATE_TEST_SUITE_P(Stages, Buckets, ::testing::Values(0, 1, 2, 3),
                         [](const auto& info) { return "stage" + std::to_string(info.param); });
INSTANTIATE_TEST_SUITE_P(Stages, GatherBuckets, ::testing::Values(1, 2),
                         [](const auto& info) { return "stage" + std::to_string(info.param); });

}  // namespace
}  // namespace zt::test
