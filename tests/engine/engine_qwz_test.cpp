// qwZ (zero_quantized_weights) at 2 and 4 ranks (4 as two nodes of 2). The quantized gather itself:
// every gathered element within the bound of every rank's source, a zero block exact, NaN kept
// visible and refused from the error samples, the record padded to whole words; with bf16 the
// dequantized values rounded to bf16. Training with it (qwZ; bf16 with accumulation 3; with hpZ and
// with MiCS over a node at 4 ranks): link bytes equal the predictor's, the all-gathers carry int8
// levels and fp32 scales (about a quarter of fp32's bytes), the reduce-scatters and all-reduces are
// unchanged, the sampled error stays within the bound, the loss close to the exact run's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>

#include "kernels/quant/block_plan.h"
#include "runtime/zero/memory_ledger.h"
#include "runtime/zero/precision_emulation.h"
#include "runtime/zero/quantized_gather.h"
#include "tests/engine/engine_test_util.h"

namespace zt::test {
namespace {

// Rank r's shard: random values of a few magnitudes, block 1 all zero, on rank 1 a NaN in block 2
// where the shard has one (block 0, the one the first gather samples, is ordinary).
std::vector<float> source_shard(int r, size_t S, size_t block) {
  std::mt19937 gen(1234u + unsigned(r));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(S);
  for (size_t i = 0; i < S; ++i) x[i] = nd(gen) * std::ldexp(1.0f, int(i / block) % 5 - 2);
  if (S >= 2 * block) std::fill(x.begin() + std::ptrdiff_t(block), x.begin() + std::ptrdiff_t(2 * block), 0.0f);
  if (r == 1 && S > 2 * block + 3) x[2 * block + 3] = std::numeric_limits<float>::quiet_NaN();
  return x;
}

// Shards of 28,000 elements (DeepSpeed-sized blocks: 4 of 7,000, nothing to pad) and of 16,003
// (not a multiple of 8: blocks of 8,000 and a last one of 3; 16,003 levels and 3 scales per rank,
// both padded to whole 8-byte words in the record).
TEST(Qwz, GatheredElementsWithinHalfAStepOfEveryRanksSource) {
  Communicator& c = *world().comm;
  const int W = c.world_size();
  for (const size_t S : {size_t(28000), size_t(16003)}) {
    SCOPED_TRACE("shard " + std::to_string(S));
    const quant::BlockPlan plan(size_t(W), S);
    MemoryLedger ledger(*world().backend);
    QuantizedGather qg(&ledger);
    std::vector<float> mine = source_shard(c.rank(), S, plan.block_size());
    std::vector<float> full(S * size_t(W), -1.0f);
    qg.gather_async(c, mine.data(), full.data(), full.size(), DType::F32)->wait();
    uint64_t my_bad = 0;
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
        if (r == c.rank()) my_bad += bad;
        for (size_t i = 0; i < n; ++i) {
          const float got = full[size_t(r) * S + begin + i];
          if (bad) {
            ASSERT_TRUE(std::isnan(got)) << "rank " << r << " block " << b << ": a NaN block dequantizes to NaN";
          } else {
            ASSERT_LE(std::fabs(double(got) - double(x[begin + i])), QuantizedGather::kBoundRel * double(absmax))
                << "rank " << r << " block " << b << " element " << i;
          }
        }
        if (absmax == 0 && !bad) {
          for (size_t i = 0; i < n; ++i) ASSERT_EQ(full[size_t(r) * S + begin + i], 0.0f) << "a zero block is exact";
        }
      }
    }
    const QuantError e = qg.take_error();
    EXPECT_EQ(e.calls, 1u);
    EXPECT_EQ(e.blocks, plan.blocks_per_shard());
    EXPECT_EQ(e.bad_blocks, my_bad);
    EXPECT_GT(e.max_rel, 0.0);
    EXPECT_LE(e.max_rel, QuantizedGather::kBoundRel);
    // What the one call carries: each rank's levels and scales, each padded to whole 8-byte words.
    const QuantizedGather::WireBytes wire = QuantizedGather::wire_bytes(full.size(), W);
    EXPECT_EQ(wire.levels, uint64_t(W) * ((S + 7) / 8 * 8));
    EXPECT_EQ(wire.scales, uint64_t(W) * ((plan.blocks_per_shard() * 4 + 7) / 8 * 8));
    EXPECT_EQ(ledger.current().total(), 0u) << "the staging buffer goes with the handle";
  }
}

// done() answers true only once the gathered buffer holds the dequantized values: a caller that
// polls and then reads, without wait(), reads what wait() would have given.
TEST(Qwz, DoneMeansTheDequantizedValuesAreInPlace) {
  Communicator& c = *world().comm;
  const int W = c.world_size();
  const size_t S = 4096;
  const quant::BlockPlan plan(size_t(W), S);
  MemoryLedger ledger(*world().backend);
  QuantizedGather qg(&ledger);
  const std::vector<float> mine = source_shard(c.rank(), S, plan.block_size());
  std::vector<float> polled(S * size_t(W), -1.0f), waited(S * size_t(W), -2.0f);
  CommHandlePtr h = qg.gather_async(c, mine.data(), polled.data(), polled.size(), DType::F32);
  while (!h->done()) {
  }
  const std::vector<float> seen = polled;  // read before any wait()
  h->wait();
  EXPECT_EQ(seen, polled) << "wait() after done() changes nothing";
  qg.gather_async(c, mine.data(), waited.data(), waited.size(), DType::F32)->wait();
  EXPECT_EQ(seen, waited) << "what done() released equals what wait() gives";
  EXPECT_EQ(qg.take_error().calls, 2u);
}

// A NaN in a sampled block is refused, not counted as error: the sampled RMS stays finite.
TEST(Qwz, ANanInASampledBlockIsCountedAsBadNotAsError) {
  Communicator& c = *world().comm;
  const int W = c.world_size();
  const size_t S = 8000;
  MemoryLedger ledger(*world().backend);
  QuantizedGather qg(&ledger);
  std::vector<float> mine(S, 0.5f);
  mine[17] = std::numeric_limits<float>::quiet_NaN();  // block 0: the first one sampled
  std::vector<float> full(S * size_t(W));
  qg.gather_async(c, mine.data(), full.data(), full.size(), DType::F32)->wait();
  const QuantError e = qg.take_error();
  EXPECT_EQ(e.bad_blocks, 1u);
  EXPECT_EQ(e.elements, 0u) << "the refused block is not sampled";
  EXPECT_TRUE(std::isfinite(e.rms_rel()));
  EXPECT_TRUE(std::isnan(full[size_t(c.rank()) * S]));
}

struct QwzCase {
  const char* name;
  int hpz = 1, accum = 1, mics = 0;
  DType precision = DType::F32;  // bf16: the CPU backend rounds the dequantized values as it stores
};

EngineOptions qwz_options(const QwzCase& c, bool qwz) {
  EngineOptions o = base_options(3, c.accum, c.precision, true);
  const int W = world().comm->world_size();
  o.ranks_per_node = W >= 4 ? W / 2 : W;
  o.gather.persistence_threshold = 0;  // the paper's stage 3: every unit gathered for forward and backward
  o.gather.max_reuse_distance = 0;
  o.gather.quantized_weights = qwz;
  o.gather.hpz_partition_size = c.hpz;
  o.zero.mics_shard_size = c.mics;
  return o;
}

TEST(Qwz, TrainsWithQuarterGatherBytesEqualToThePredictor) {
  const int W = world().comm->world_size();
  if (W < 2) GTEST_SKIP() << "needs ranks to gather from";
  const ModelConfig model = tiny_model(true);
  const int steps = 40;
  std::vector<QwzCase> cases = {{"qwZ"}, {"qwZ bf16, accumulation 3", 1, 3, 0, DType::BF16}};
  if (W >= 4) {
    cases.push_back({"qwZ + hpZ", W / 2});
    cases.push_back({"qwZ + MiCS over a node", 1, 1, W / 2});
  }
  for (const QwzCase& c : cases) {
    if (kGlobalBatch % (W * c.accum)) continue;
    SCOPED_TRACE(c.name);
    const RunResult exact = run_engine(model, qwz_options(c, false), steps);
    const RunResult q = run_engine(model, qwz_options(c, true), steps);
    Engine probe(model, qwz_options(c, true), *world().backend, *world().comm);
    const LinkBytes want = probe.expected_link_bytes_per_step();
    QuantError sampled;  // over the run: one block in 16 is sampled, and a step of tiny has few
    for (size_t s = 0; s < q.stats.size(); ++s) {
      const StepStats& st = q.stats[s];
      ASSERT_EQ(st.comm_links.intra, want.intra) << "step " << s + 1;
      ASSERT_EQ(st.comm_links.inter, want.inter) << "step " << s + 1;
      EXPECT_EQ(st.comm_bytes[int(CommOp::ReduceScatter)], exact.stats[s].comm_bytes[int(CommOp::ReduceScatter)]);
      EXPECT_EQ(st.comm_bytes[int(CommOp::AllReduce)], exact.stats[s].comm_bytes[int(CommOp::AllReduce)]);
      // int8 levels and a 4-byte scale per block against fp32: a little over a quarter, with the
      // step's loss and norm exchanges (a few bytes a rank) on top.
      const double ratio = double(st.comm_bytes[int(CommOp::AllGather)]) /
                           double(exact.stats[s].comm_bytes[int(CommOp::AllGather)]);
      EXPECT_GT(ratio, 0.25);
      EXPECT_LT(ratio, 0.27);
      ASSERT_GT(st.quant_weights.calls, 0u);
      sampled.add(st.quant_weights);
      EXPECT_LE(st.quant_weights.max_rel, QuantizedGather::kBoundRel) << "within half a step of the block's absmax";
      EXPECT_LE(st.quant_weights.rms_rel(), st.quant_weights.max_rel);
      EXPECT_EQ(st.quant_weights.bad_blocks, 0u);
      EXPECT_TRUE(std::isfinite(q.losses[s]));
      EXPECT_EQ(exact.stats[s].quant_weights.calls, 0u);
    }
    EXPECT_GT(sampled.elements, 0u) << "blocks were sampled";
    EXPECT_GT(sampled.quantize_s, 0.0);
    EXPECT_GT(sampled.dequantize_s, 0.0);
    EXPECT_GT(sampled.max_rel, 0.0);
    // Close to the exact run, not equal to it (the forward and backward see quantized weights).
    EXPECT_NE(q.summary.checksum, exact.summary.checksum);
    const double qm = mean_of_last(q.losses, 10), em = mean_of_last(exact.losses, 10);
    EXPECT_LT(std::fabs(qm - em) / em, 0.02) << "qwZ " << qm << " exact " << em;
    for (size_t s = 0; s < q.norms.size(); ++s) {
      EXPECT_GT(q.norms[s] / exact.norms[s], 0.8) << "step " << s + 1;
      EXPECT_LT(q.norms[s] / exact.norms[s], 1.25) << "step " << s + 1;
    }
    if (c.hpz > 1) {  // the secondary's gathers are quantized too, and go over the node group
      EXPECT_GT(q.stats.back().groups.by_role[int(CommRole::Secondary)].bytes[int(CommOp::AllGather)], 0u);
    }
  }
}

// Persistent units (at or under stage3_param_persistence_threshold) are gathered exactly under qwZ,
// as DeepSpeed's _post_step gathers them with quantize=False: with every unit persistent the run is
// the exact run bit for bit and quantizes nothing; with some persistent, the link bytes still equal
// the predictor's, and fewer calls are quantized than with none.
TEST(Qwz, PersistentUnitsAreGatheredExactly) {
  const int W = world().comm->world_size();
  if (W < 2) GTEST_SKIP() << "needs ranks to gather from";
  const ModelConfig model = tiny_model(true);
  const int steps = 6;
  const QwzCase c{"qwZ"};
  auto with_threshold = [&](bool qwz, int64_t threshold) {
    EngineOptions o = qwz_options(c, qwz);
    o.gather.persistence_threshold = threshold;
    return o;
  };
  const int64_t all = int64_t(1) << 40;
  const RunResult exact = run_engine(model, with_threshold(false, all), steps);
  const RunResult q = run_engine(model, with_threshold(true, all), steps);
  EXPECT_EQ(q.summary.checksum, exact.summary.checksum) << "every unit persistent: nothing quantized";
  for (const StepStats& st : q.stats) EXPECT_EQ(st.quant_weights.calls, 0u);
  // A threshold between the smallest and the largest unit: some gathered exactly, the rest quantized.
  Engine sizes(model, with_threshold(true, 0), *world().backend, *world().comm);
  std::vector<int64_t> numel;
  for (int u = 0; u < sizes.partition().units(); ++u) numel.push_back(sizes.partition().shard(u).numel);
  const int64_t mid = *std::min_element(numel.begin(), numel.end());
  ASSERT_LT(mid, *std::max_element(numel.begin(), numel.end())) << "tiny has units of different sizes";
  const RunResult none = run_engine(model, with_threshold(true, 0), steps);
  const RunResult some = run_engine(model, with_threshold(true, mid), steps);
  Engine probe(model, with_threshold(true, mid), *world().backend, *world().comm);
  const LinkBytes want = probe.expected_link_bytes_per_step();
  for (size_t s = 0; s < some.stats.size(); ++s) {
    ASSERT_EQ(some.stats[s].comm_links.intra, want.intra) << "step " << s + 1;
    ASSERT_EQ(some.stats[s].comm_links.inter, want.inter) << "step " << s + 1;
    EXPECT_GT(some.stats[s].quant_weights.calls, 0u);
    EXPECT_LT(some.stats[s].quant_weights.calls, none.stats[s].quant_weights.calls);
  }
}

// bf16 training on the CPU backend: the gathered unit holds bf16 values (every fp32 element's low 16
// bits zero), each the fp32 dequantized value rounded to nearest even, as a bf16 backend stores it.
TEST(Qwz, Bf16GathersHoldTheDequantizedValuesRoundedToBf16) {
  Communicator& c = *world().comm;
  const int W = c.world_size();
  const size_t S = 28000;
  std::vector<float> mine = source_shard(c.rank() + 7, S, 7000);  // no NaN (rank 8 and up)
  MemoryLedger ledger(*world().backend);
  QuantizedGather qg(&ledger);
  std::vector<float> as_f32(S * size_t(W)), as_bf16(S * size_t(W));
  qg.gather_async(c, mine.data(), as_f32.data(), as_f32.size(), DType::F32)->wait();
  qg.gather_async(c, mine.data(), as_bf16.data(), as_bf16.size(), DType::BF16)->wait();
  std::vector<float> want = as_f32;
  round_to_precision(want.data(), want.size(), DType::BF16);
  size_t differ = 0, not_bf16 = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &as_bf16[i], 4);
    not_bf16 += (bits & 0xffffu) != 0;
    differ += std::memcmp(&as_bf16[i], &want[i], 4) != 0;
  }
  EXPECT_EQ(not_bf16, 0u);
  EXPECT_EQ(differ, 0u);
  EXPECT_NE(std::memcmp(as_f32.data(), as_bf16.data(), 4 * as_f32.size()), 0) << "the rounding did something";
}

}  // namespace
}  // namespace zt::test
