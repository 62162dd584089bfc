// qgZ (zero_quantized_gradients) at 4 ranks, as two nodes of 2 and as four nodes of 1. The
// quantized reduction itself, against an fp64 sum of every rank's values computed on the side:
// every owned element within the two roundings' bound, the SUM (as the exact reduce-scatter returns
// it; DeepSpeed's n-times-the-mean would fail), other ranks' copies untouched, a zero block exact,
// NaN kept visible, owners of unequal size (records padded), the bytes of each hop equal to
// wire_bytes(). Training with it (alone, bf16 with accumulation 3, with qwZ and hpZ): link bytes
// equal the predictor's, the 1-D tensors reduced exactly (counted, and bitwise the exact run's after a
// step), the all-to-all bytes within Ψ's bounds, the loss near the exact run's;
// on one node it is off and the run is the exact one, bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>

#include "runtime/model/unit_layout.h"
#include "runtime/zero/memory_ledger.h"
#include "runtime/zero/quantized_reduce.h"
#include "tests/engine/engine_test_util.h"

namespace zt::test {
namespace {

// Elements per scale in the reduction tests (the engine takes the model's width).
constexpr size_t kBlock = 256;

// The test's bucket: segments of these counts, owned round-robin with a twist (owner (i * 3) % W),
// so owners hold unequal totals and some hold pieces in several places.
const size_t kCounts[] = {700, 1029, 3, 0, 2048, 513, 96, 1500};

int owner_of(size_t i, int W) { return int((i * 3) % size_t(W)); }

// Rank r's value for element e of segment i: normal, magnitude changing per segment; segment 4 all zero.
float value(int r, size_t i, size_t e) {
  if (i == 4) return 0.0f;
  std::mt19937 gen(unsigned(977 * r + 131 * i + e * 7919));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  return nd(gen) * std::ldexp(1.0f, int(i % 5) - 2);
}

struct Groups {
  std::unique_ptr<Communicator> node, cross;
};

// n ranks per node over the world: the node group (null for n == 1) and the cross group.
Groups split_groups(Communicator& c, int n) {
  Groups g;
  auto node = c.split(c.rank() / n, c.rank());
  if (n > 1) g.node = std::move(node);
  g.cross = c.split(c.rank() % n, c.rank());
  return g;
}

// The bound on |got - sum| for element `e` of owner q's packed stream: for every node, half a step
// of each contributor's block and half a step of the node sum's block (whose absmax is at most the
// contributors' absmaxes added, each possibly rounded up by half a step), plus fp32 additions.
double element_bound(const std::vector<std::vector<float>>& packed_by_rank, size_t e, size_t block, int n) {
  const int W = int(packed_by_rank.size());
  const size_t b0 = e / block * block, b1 = std::min(b0 + block, packed_by_rank[0].size());
  double total = 0, mag = 0;
  for (int node = 0; node < W / n; ++node) {
    double contributors = 0;
    for (int r = node * n; r < node * n + n; ++r) {
      double a = 0;
      for (size_t i = b0; i < b1; ++i) a = std::max(a, double(std::fabs(packed_by_rank[size_t(r)][i])));
      contributors += a;
    }
    const double first = n > 1 ? contributors * QuantizedReduce::kBoundRel : 0.0;  // n == 1: no first hop
    total += first + (contributors + first) * QuantizedReduce::kBoundRel;
    mag += contributors + first;
  }
  return total + 8 * mag * 0x1p-24;
}

void check_reduce(int n) {
  Communicator& c = *world().comm;
  const int W = c.world_size(), me = c.rank();
  SCOPED_TRACE(std::to_string(W / n) + " nodes of " + std::to_string(n));
  Groups g = split_groups(c, n);
  MemoryLedger ledger(*world().backend);
  QuantizedReduce q(ledger, g.node.get(), *g.cross, kBlock);
  const size_t S = std::size(kCounts);
  std::vector<std::vector<float>> bufs(S);
  std::vector<Segment> segs;
  for (size_t i = 0; i < S; ++i) {
    for (size_t e = 0; e < kCounts[i]; ++e) bufs[i].push_back(value(me, i, e));
    if (i == 2 && me == 1) bufs[i][1] = std::numeric_limits<float>::quiet_NaN();  // in owner 6 % W's stream
    segs.push_back({bufs[i].data(), kCounts[i], owner_of(i, W)});
  }
  const std::vector<std::vector<float>> before = bufs;
  q.reduce_async(segs)->wait();
  // Every owner's packed stream on every rank (segments in list order), the record size, the sums.
  std::vector<size_t> owned(size_t(W), 0);
  for (size_t i = 0; i < S; ++i) owned[size_t(owner_of(i, W))] += kCounts[i];
  const size_t M = *std::max_element(owned.begin(), owned.end());
  const QgzRecord rec = QgzRecord::for_elems(M, kBlock);
  std::vector<std::vector<float>> packed(size_t(W), std::vector<float>(M, 0.0f));
  size_t at = 0;
  bool nan_block = false;
  for (size_t i = 0; i < S; ++i) {
    if (owner_of(i, W) != me) continue;
    for (size_t e = 0; e < kCounts[i]; ++e, ++at)
      for (int r = 0; r < W; ++r) packed[size_t(r)][at] = (i == 2 && r == 1 && e == 1) ? NAN : value(r, i, e);
  }
  at = 0;
  for (size_t i = 0; i < S; ++i) {
    if (owner_of(i, W) != me) {
      if (kCounts[i]) EXPECT_EQ(std::memcmp(bufs[i].data(), before[i].data(), kCounts[i] * 4), 0) << "segment " << i << " is not ours";
      continue;
    }
    for (size_t e = 0; e < kCounts[i]; ++e, ++at) {
      const float got = bufs[i][e];
      bool block_has_nan = false;
      for (size_t k = at / rec.block * rec.block; k < std::min(M, at / rec.block * rec.block + rec.block); ++k)
        for (int r = 0; r < W; ++r) block_has_nan |= std::isnan(packed[size_t(r)][k]);
      if (block_has_nan) {
        nan_block = true;
        ASSERT_TRUE(std::isnan(got)) << "segment " << i << " element " << e << ": a NaN block stays NaN";
        continue;
      }
      double sum = 0;
      for (int r = 0; r < W; ++r) sum += double(value(r, i, e));
      ASSERT_LE(std::fabs(double(got) - sum), element_bound(packed, at, rec.block, n))
          << "segment " << i << " element " << e << ": got " << got << ", the sum is " << sum;
      if (i == 4) ASSERT_EQ(got, 0.0f) << "a zero block is exact";
    }
  }
  const QuantError err = q.take_error();
  EXPECT_EQ(err.calls, 1u);
  EXPECT_GT(err.elements, 0u);
  EXPECT_LE(err.max_rel, QuantizedReduce::kBoundRel);
  EXPECT_GT(err.max_rel, 0.0);
  // Rank 1 quantizes the NaN; with a first hop, so does the rank of its node that sums the owner's part.
  const int nan_owner = owner_of(2, W), summer = (1 / n) * n + nan_owner % n;
  EXPECT_EQ(err.bad_blocks > 0, me == 1 || (n > 1 && me == summer)) << "refused blocks are counted where quantized";
  EXPECT_EQ(nan_block, me == nan_owner);
  // The bytes of each hop: n·k records inside the node, k across nodes.
  const QuantizedReduce::WireBytes w = QuantizedReduce::wire_bytes(M, kBlock, n, W / n);
  EXPECT_EQ(g.cross->stats()[CommOp::AllToAll].bytes, w.inter());
  EXPECT_EQ(w.inter_levels, uint64_t(W / n) * (((M + 1) / 2 + 7) / 8 * 8));
  EXPECT_EQ(w.inter_scales, uint64_t(W / n) * (((M + kBlock - 1) / kBlock * 4 + 7) / 8 * 8));
  if (n > 1) EXPECT_EQ(g.node->stats()[CommOp::AllToAll].bytes, w.intra());
  else EXPECT_EQ(w.intra(), 0u);
  EXPECT_EQ(ledger.current().total(), 0u) << "the buffers go with the handle";
}

TEST(Qgz, SumsWithinTheTwoRoundingsOfAnFp64Sum) {
  const int W = world().comm->world_size();
  if (W < 4) GTEST_SKIP() << "needs two nodes of two ranks";
  check_reduce(2);
  check_reduce(1);
}

// Every rank sends 1.0 everywhere: every block's levels are exact, so the result is exactly W — the
// sum the exact reduce-scatter returns. DeepSpeed's quantized rule (no pre-divide; the k node sums
// divided by k, coalesced_collectives.py:75) would give W / k = n here, n times the mean (1), which
// its exact fallback for 1-D tensors (pre-divided by W, l.201) gives in the same step.
TEST(Qgz, TheResultIsTheSumNotNTimesTheMean) {
  Communicator& c = *world().comm;
  const int W = c.world_size();
  if (W < 4) GTEST_SKIP() << "needs two nodes of two ranks";
  Groups g = split_groups(c, 2);
  MemoryLedger ledger(*world().backend);
  QuantizedReduce q(ledger, g.node.get(), *g.cross, kBlock);
  std::vector<float> buf(size_t(W) * 1000, 1.0f);
  std::vector<Segment> segs;
  for (int r = 0; r < W; ++r) segs.push_back({buf.data() + size_t(r) * 1000, 1000, r});
  q.reduce_async(segs)->wait();
  for (size_t i = 0; i < 1000; ++i) ASSERT_EQ(buf[size_t(c.rank()) * 1000 + i], float(W)) << i;
}

// A bucket holding nothing issues no call; a one-node cross group and a block off whole bytes are refused.
TEST(Qgz, AnEmptyBucketSendsNothing) {
  Communicator& c = *world().comm;
  if (c.world_size() < 4) GTEST_SKIP() << "needs two nodes of two ranks";
  Groups g = split_groups(c, 2);
  MemoryLedger ledger(*world().backend);
  QuantizedReduce q(ledger, g.node.get(), *g.cross, kBlock);
  EXPECT_TRUE(q.reduce_async({{nullptr, 0, 0}, {nullptr, 0, 3}})->done());
  EXPECT_EQ(g.cross->stats()[CommOp::AllToAll].calls, 0u);
  Groups one = split_groups(c, c.world_size());
  EXPECT_THROW(QuantizedReduce(ledger, one.node.get(), *one.cross, kBlock), std::invalid_argument);
  EXPECT_THROW(QuantizedReduce(ledger, g.node.get(), *g.cross, 12), std::invalid_argument);  // not a multiple of 8
  // The engine's block: the model's width, as DeepSpeed's max(rows, cols, world) groups give for a
  // GPT-2 matrix, rounded up to whole int4 bytes.
  EXPECT_EQ(QuantizedReduce::block_for_width(768), 768u);
  EXPECT_EQ(QuantizedReduce::block_for_width(16), 16u);
  EXPECT_EQ(QuantizedReduce::block_for_width(61), 64u);
  EXPECT_EQ(QuantizedReduce::block_for_width(0), 8u);
}

struct QgzCase {
  const char* name;
  int accum = 1;
  DType precision = DType::F32;
  bool qwz_hpz = false;  // all three: qwZ, hpZ over the node, qgZ
  int ranks_per_node = 2;
};

EngineOptions qgz_options(const QgzCase& c, bool qgz) {
  EngineOptions o = base_options(3, c.accum, c.precision, true);
  o.ranks_per_node = c.ranks_per_node;
  o.gather.persistence_threshold = 0;
  o.gather.max_reuse_distance = 0;
  o.reduce.quantized_gradients = qgz;
  if (c.qwz_hpz) {
    o.gather.quantized_weights = qgz;
    o.gather.hpz_partition_size = qgz ? c.ranks_per_node : 1;
  }
  return o;
}

// The elements of the model's 1-D tensors: what qgZ reduce-scatters exactly every micro-step.
uint64_t one_d_elements(const ModelConfig& m) {
  uint64_t n = 0;
  for (const UnitLayout& u : build_unit_layouts(m))
    for (const TensorView& t : u.tensors)
      if (t.shape.size() < 2) n += uint64_t(t.numel);
  return n;
}

// The block is the shortest side among the model's matrices: GPT-2's width, and under Llama's
// grouped-query attention the k and v projections' Hkv·hd rows (llama-tiny: 2 kv heads of 8 = 16,
// against a width of 32), as DeepSpeed's max(rows, cols, world) groups give those tensors.
TEST(Qgz, TheBlockIsTheShortestMatrixSideGqaIncluded) {
  const int W = world().comm->world_size();
  if (W < 4) GTEST_SKIP() << "needs two nodes of two ranks";
  const ModelConfig llama = tiny_llama_model(false);
  ASSERT_LT(int64_t(llama.kv_head_count()) * llama.head_width(), int64_t(llama.dim)) << "the preset uses GQA";
  Engine gqa(llama, qgz_options(QgzCase{"llama"}, true), *world().backend, *world().comm);
  EXPECT_EQ(gqa.quantized_gradient_block(), int64_t(llama.kv_head_count()) * llama.head_width());
  const ModelConfig gpt2 = *model_preset("small");
  Engine wide(gpt2, qgz_options(QgzCase{"gpt2"}, true), *world().backend, *world().comm);
  EXPECT_EQ(wide.quantized_gradient_block(), int64_t(gpt2.dim));
}

TEST(Qgz, TrainsWithLinkBytesEqualToThePredictor) {
  const int W = world().comm->world_size();
  if (W < 4) GTEST_SKIP() << "needs two nodes of two ranks";
  const ModelConfig model = tiny_model(true);
  const int steps = 40;
  const std::vector<QgzCase> cases = {{"qgZ, 2 nodes of 2"},
                                      {"qgZ, 4 nodes of 1", 1, DType::F32, false, 1},
                                      {"qgZ bf16, accumulation 3", 3, DType::BF16},
                                      {"qwZ + hpZ + qgZ", 1, DType::F32, true}};
  for (const QgzCase& c : cases) {
    if (kGlobalBatch % (W * c.accum)) continue;
    SCOPED_TRACE(c.name);
    const RunResult exact = run_engine(model, qgz_options(c, false), steps);
    const RunResult q = run_engine(model, qgz_options(c, true), steps);
    Engine probe(model, qgz_options(c, true), *world().backend, *world().comm);
    ASSERT_TRUE(probe.quantizes_gradients());
    const LinkBytes want = probe.expected_link_bytes_per_step();
    const uint64_t es = 4;  // the CPU backend's fp32 buffers
    // The all-to-alls' bytes from Ψ alone, not from the implementation's records: per micro-step
    // half a byte an element (the quantized ones at least, every padded one at most) plus a scale per
    // block and each record's word padding, inside the node, and 1/n of that across nodes.
    const double n = c.ranks_per_node, units = double(build_unit_layouts(model).size());
    const double psi = double(probe.params()), padded = psi + units * W * 16, block = double(probe.quantized_gradient_block());
    const double buckets = double(probe.grad_buckets()), hops = (n > 1 ? 1.0 : 0.0) + 1.0 / n;
    const double a2a_min = c.accum * hops * (psi - double(one_d_elements(model))) / 2;
    const double a2a_max = c.accum * hops * (padded / 2 + 4 * (padded / block + W * buckets) + 16 * W * buckets);
    QuantError sampled;
    for (size_t s = 0; s < q.stats.size(); ++s) {
      const StepStats& st = q.stats[s];
      ASSERT_EQ(st.comm_links.intra, want.intra) << "step " << s + 1;
      ASSERT_EQ(st.comm_links.inter, want.inter) << "step " << s + 1;
      // The reduce-scatter carries the 1-D tensors alone, every micro-step; the rest went by all-to-all.
      EXPECT_EQ(st.comm_bytes[int(CommOp::ReduceScatter)], one_d_elements(model) * es * uint64_t(c.accum));
      EXPECT_EQ(st.quant_grads.exact_elements, one_d_elements(model) * uint64_t(c.accum));
      EXPECT_GE(double(st.comm_bytes[int(CommOp::AllToAll)]), a2a_min) << "step " << s + 1;
      EXPECT_LE(double(st.comm_bytes[int(CommOp::AllToAll)]), a2a_max) << "step " << s + 1 << ": records padded past the data";
      EXPECT_EQ(exact.stats[s].comm_bytes[int(CommOp::AllToAll)], 0u);
      ASSERT_GT(st.quant_grads.calls, 0u);
      EXPECT_LE(st.quant_grads.max_rel, QuantizedReduce::kBoundRel);
      EXPECT_EQ(st.quant_grads.bad_blocks, 0u);
      sampled.add(st.quant_grads);
      EXPECT_TRUE(std::isfinite(q.losses[s]));
    }
    EXPECT_GT(sampled.elements, 0u);
    EXPECT_GT(sampled.max_rel, 0.0);
    EXPECT_GT(sampled.quantize_s, 0.0);
    EXPECT_NE(q.summary.checksum, exact.summary.checksum);
    const double qm = mean_of_last(q.losses, 10), em = mean_of_last(exact.losses, 10);
    EXPECT_LT(std::fabs(qm - em) / em, 0.05) << "qgZ " << qm << " exact " << em;
    for (size_t s = 0; s < q.norms.size(); ++s) {
      EXPECT_GT(q.norms[s] / exact.norms[s], 0.8) << "step " << s + 1;
      EXPECT_LT(q.norms[s] / exact.norms[s], 1.25) << "step " << s + 1;
    }
  }
}

// Unit u's master after one AdamW step without clipping (each element's update then depends on its
// own gradient alone), and which of its state elements belong to a 1-D tensor.
struct OneStep {
  std::vector<std::vector<float>> master;
  std::vector<std::vector<bool>> one_d;
};

OneStep one_step(const ModelConfig& model, EngineOptions o) {
  World& w = world();
  o.update.gradient_clipping = 0;
  Engine e(model, o, *w.backend, *w.comm);
  BatchSampler sampler(w.data.train, model.seq_len, 7);
  const BatchGeometry geom{w.comm->world_size(), o.micro_batch, o.grad_accum};
  e.train_step([&](int micro, int32_t* tok, int32_t* tgt) { sampler.fill(0, geom, w.comm->rank(), micro, tok, tgt); });
  OneStep r;
  const Partition& p = e.partition();
  for (int u = 0; u < p.units(); ++u) {
    const UnitPart& up = p.unit(u);
    r.master.emplace_back(size_t(up.state_valid));
    e.read_state(StateArray::Master, u, 0, up.state_valid, r.master.back().data());
    std::vector<bool> flags(size_t(up.state_valid), false);
    for (const TensorSpec& t : p.map().unit(u).tensors)
      for (int64_t i = std::max(t.offset, up.state_begin); i < std::min(t.offset + t.size, up.state_begin + up.state_valid); ++i)
        flags[size_t(i - up.state_begin)] = t.dims < 2;
    r.one_d.push_back(std::move(flags));
  }
  return r;
}

// The 1-D tensors go through the exact reduce-scatter: after one step every 1-D element's master is
// bitwise the exact run's, while some of the quantized elements' are not.
TEST(Qgz, OneDTensorsAreReducedExactly) {
  if (world().comm->world_size() < 4) GTEST_SKIP() << "needs two nodes of two ranks";
  const ModelConfig model = tiny_model(true);
  const QgzCase c{"2 nodes of 2"};
  const OneStep exact = one_step(model, qgz_options(c, false)), q = one_step(model, qgz_options(c, true));
  size_t one_d = 0, one_d_differ = 0, two_d = 0, two_d_differ = 0;
  for (size_t u = 0; u < exact.master.size(); ++u)
    for (size_t i = 0; i < exact.master[u].size(); ++i) {
      const bool differ = std::memcmp(&exact.master[u][i], &q.master[u][i], 4) != 0;
      (exact.one_d[u][i] ? one_d : two_d) += 1;
      (exact.one_d[u][i] ? one_d_differ : two_d_differ) += differ;
    }
  EXPECT_EQ(one_d_differ, 0u) << "of " << one_d << " 1-D elements on this rank";
  Communicator& c0 = *world().comm;
  std::vector<int64_t> counts = {int64_t(one_d), int64_t(two_d_differ)};
  c0.all_reduce(counts.data(), counts.data(), 2, DType::I64, ReduceOp::Sum);
  EXPECT_GT(counts[0], 0) << "the model has 1-D tensors";
  EXPECT_GT(counts[1], 0) << "the quantized elements moved differently";
}

// On one node there is nothing to cross: qgZ is off and the run is the exact one, bit for bit.
TEST(Qgz, OnOneNodeItIsOffAndTheRunIsExact) {
  const int W = world().comm->world_size();
  if (W < 2) GTEST_SKIP() << "needs ranks to reduce over";
  const ModelConfig model = tiny_model(true);
  QgzCase c{"one node"};
  c.ranks_per_node = W;
  Engine probe(model, qgz_options(c, true), *world().backend, *world().comm);
  EXPECT_FALSE(probe.quantizes_gradients());
  const RunResult exact = run_engine(model, qgz_options(c, false), 5);
  const RunResult q = run_engine(model, qgz_options(c, true), 5);
  EXPECT_EQ(q.summary.checksum, exact.summary.checksum);
  EXPECT_EQ(q.losses, exact.losses);
  for (const StepStats& st : q.stats) EXPECT_EQ(st.quant_grads.calls, 0u);
}

}  // namespace
}  // namespace zt::test
