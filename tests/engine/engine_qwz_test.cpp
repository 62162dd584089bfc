// qwZ (zero_quantized_weights) at 2 and 4 ranks (4 as two nodes of 2): the quantized gather itself
// (every gathered element within half a quantization step of every rank's source, a zero block
// exact, NaN kept visible), and training with it: link bytes equal the predictor's for qwZ and
// qwZ + hpZ, the all-gathers carry int8 levels and fp32 scales (about a quarter of fp32's bytes),
// the reduce-scatters are unchanged, the sampled error stays within the bound, and the loss stays
// close to the exact run's.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "kernels/quant/block_plan.h"
#include "runtime/zero/memory_ledger.h"
#include "runtime/zero/quantized_gather.h"
#include "tests/engine/engine_test_util.h"

namespace zt::test {
namespace {

// Rank r's shard: random values of a few magnitudes, block 1 all zero, on rank 1 a NaN in block 2
// (block 0, the one the first gather samples, is ordinary).
std::vector<float> source_shard(int r, size_t S, size_t block) {
  std::mt19937 gen(1234u + unsigned(r));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(S);
  for (size_t i = 0; i < S; ++i) x[i] = nd(gen) * std::ldexp(1.0f, int(i / block) % 5 - 2);
  if (S >= 2 * block) std::fill(x.begin() + std::ptrdiff_t(block), x.begin() + std::ptrdiff_t(2 * block), 0.0f);
  if (r == 1 && S > 2 * block) x[2 * block + 3] = std::numeric_limits<float>::quiet_NaN();
  return x;
}

TEST(Qwz, GatheredElementsWithinHalfAStepOfEveryRanksSource) {
  Communicator& c = *world().comm;
  const int W = c.world_size();
  const size_t S = 3 * 8000 + 4000;  // DeepSpeed-sized blocks: 4 of 7000 per shard
  const quant::BlockPlan plan(size_t(W), S);
  MemoryLedger ledger(*world().backend);
  QuantizedGather qg(&ledger);
  std::vector<float> mine = source_shard(c.rank(), S, plan.block_size());
  std::vector<float> full(S * size_t(W), -1.0f);
  qg.gather_async(c, mine.data(), full.data(), full.size(), DType::F32)->wait();
  for (int r = 0; r < W; ++r) {
    const std::vector<float> x = source_shard(r, S, plan.block_size());
    for (size_t b = 0; b < plan.blocks_per_shard(); ++b) {
      const size_t begin = b * plan.block_size(), n = std::min(plan.block_size(), S - begin);
      float absmax = 0;
      bool bad = false;
      for (size_t i = 0; i < n; ++i) {
        bad |= !std::isfinite(x[begin + i]);
        absmax = std::max(absmax, std::fabs(x[begin + i]));
      }
      const double half_step = double(absmax) / 127 / 2;
      for (size_t i = 0; i < n; ++i) {
        const float got = full[size_t(r) * S + begin + i];
        if (bad) {
          ASSERT_TRUE(std::isnan(got)) << "rank " << r << " block " << b << ": a NaN block dequantizes to NaN";
        } else {
          // Half a step of the exact product, and half an fp32 ulp of the dequantized value.
          ASSERT_LE(std::fabs(double(got) - double(x[begin + i])), half_step * (1 + 1e-6) + 1e-30)
              << "rank " << r << " block " << b << " element " << i;
        }
      }
      if (absmax == 0 && !bad) {
        for (size_t i = 0; i < n; ++i) ASSERT_EQ(full[size_t(r) * S + begin + i], 0.0f) << "a zero block is exact";
      }
    }
  }
  const QuantError e = qg.take_error();
  EXPECT_EQ(e.gathers, 1u);
  EXPECT_EQ(e.blocks, plan.blocks_per_shard());
  EXPECT_EQ(e.bad_blocks, c.rank() == 1 ? 1u : 0u);
  EXPECT_GT(e.max_rel, 0.0);
  EXPECT_LE(e.max_rel, QuantizedGather::kBoundRel);
  // What the one call carries: each rank's levels and scales, each padded to 8-byte words.
  const QuantizedGather::WireBytes wire = QuantizedGather::wire_bytes(full.size(), W);
  EXPECT_EQ(wire.levels, uint64_t(W) * S);
  EXPECT_EQ(wire.scales, uint64_t(W) * ((plan.blocks_per_shard() * 4 + 7) / 8 * 8));
  const QuantizedGather::WireBytes odd = QuantizedGather::wire_bytes(size_t(W) * 8003 * 8, W);  // levels not whole words
  EXPECT_EQ(odd.levels % (8 * uint64_t(W)), 0u);
  EXPECT_GE(odd.levels, uint64_t(W) * 8003 * 8);
  EXPECT_EQ(ledger.current().total(), 0u) << "the staging buffers go with the handle";
}

EngineOptions qwz_options(bool qwz, int hpz) {
  EngineOptions o = base_options(3, 1, DType::F32, true);
  const int W = world().comm->world_size();
  o.ranks_per_node = W >= 4 ? W / 2 : W;
  o.gather.persistence_threshold = 0;  // the paper's stage 3: every unit gathered for forward and backward
  o.gather.max_reuse_distance = 0;
  o.gather.quantized_weights = qwz;
  o.gather.hpz_partition_size = hpz;
  return o;
}

double mean_of_last(const std::vector<double>& v, size_t n) {
  return std::accumulate(v.end() - std::ptrdiff_t(n), v.end(), 0.0) / double(n);
}

TEST(Qwz, TrainsWithQuarterGatherBytesEqualToThePredictor) {
  const int W = world().comm->world_size();
  if (W < 2) GTEST_SKIP() << "needs ranks to gather from";
  const ModelConfig model = tiny_model(true);
  const int steps = 40;
  const RunResult exact = run_engine(model, qwz_options(false, 1), steps);
  std::vector<int> hpzs = {1};
  if (W >= 4) hpzs.push_back(W / 2);
  for (int hpz : hpzs) {
    SCOPED_TRACE("hpz " + std::to_string(hpz));
    const RunResult q = run_engine(model, qwz_options(true, hpz), steps);
    Engine probe(model, qwz_options(true, hpz), *world().backend, *world().comm);
    const LinkBytes want = probe.expected_link_bytes_per_step();
    QuantError sampled;  // over the run: one block in 16 is sampled, and a step of tiny has few
    for (size_t s = 0; s < q.stats.size(); ++s) {
      const StepStats& st = q.stats[s];
      ASSERT_EQ(st.comm_links.intra, want.intra) << "step " << s + 1;
      ASSERT_EQ(st.comm_links.inter, want.inter) << "step " << s + 1;
      EXPECT_EQ(st.comm_bytes[int(CommOp::ReduceScatter)], exact.stats[s].comm_bytes[int(CommOp::ReduceScatter)]);
      // int8 levels and a 4-byte scale per block against fp32: a little over a quarter, with the
      // step's loss and norm exchanges (a few bytes a rank) on top.
      const double ratio = double(st.comm_bytes[int(CommOp::AllGather)]) /
                           double(exact.stats[s].comm_bytes[int(CommOp::AllGather)]);
      EXPECT_GT(ratio, 0.25);
      EXPECT_LT(ratio, 0.27);
      ASSERT_GT(st.quant_weights.gathers, 0u);
      sampled.add(st.quant_weights);
      EXPECT_LE(st.quant_weights.max_rel, QuantizedGather::kBoundRel) << "within half a step of the block's absmax";
      EXPECT_LE(st.quant_weights.rms_rel(), st.quant_weights.max_rel);
      EXPECT_EQ(st.quant_weights.bad_blocks, 0u);
      EXPECT_TRUE(std::isfinite(q.losses[s]));
      EXPECT_EQ(exact.stats[s].quant_weights.gathers, 0u);
    }
    EXPECT_GT(sampled.elements, 0u) << "blocks were sampled";
    EXPECT_GT(sampled.max_rel, 0.0);
    // Close to the exact run, not equal to it (the forward and backward see quantized weights).
    EXPECT_NE(q.summary.checksum, exact.summary.checksum);
    const double qm = mean_of_last(q.losses, 10), em = mean_of_last(exact.losses, 10);
    EXPECT_LT(std::fabs(qm - em) / em, 0.02) << "qwZ " << qm << " exact " << em;
    for (size_t s = 0; s < q.norms.size(); ++s) {
      EXPECT_GT(q.norms[s] / exact.norms[s], 0.8) << "step " << s + 1;
      EXPECT_LT(q.norms[s] / exact.norms[s], 1.25) << "step " << s + 1;
    }
    if (hpz > 1) {  // the secondary's gathers are quantized too, and go over the node group
      EXPECT_GT(q.stats.back().groups.by_role[int(CommRole::Secondary)].bytes[int(CommOp::AllGather)], 0u);
    }
  }
}

}  // namespace
}  // namespace zt::test
