// hpZ (zero_hpz_partition_size) at 4 ranks as two nodes of 2, and at 2 ranks as one node of 2: bitwise the same training as
// stage 3 (losses, norms, the parameter checksum) with and without accumulation and overlap; the
// gathers that run from the secondary copy go over the node group, so the bytes between nodes drop
// while the all-gather volume stays the same, and measured link bytes equal the predictor's; the
// secondary copy is on the ledger; parameters rewritten between steps (as a checkpoint load ends)
// continue bitwise. The secondary copy never outlives a step: release_all after every update drops
// it, which the three-step comparison pins (a stale copy would change the second step's forward).
#include <gtest/gtest.h>

#include "runtime/data/sampler.h"
#include "tests/engine/engine_test_util.h"

namespace zt::test {
namespace {

struct HpzCase {
  int accum;
  bool overlap, paper;  // paper: no reuse or persistence, so every backward gathers again
};

// Ranks per node, and the hpZ group: two nodes where the world allows it, else one.
int node_size() {
  const int W = world().comm->world_size();
  return W >= 4 ? W / 2 : W;
}

EngineOptions hpz_options(const HpzCase& c, int hpz) {
  EngineOptions o = base_options(3, c.accum, DType::F32, c.overlap);
  o.ranks_per_node = node_size();
  o.gather.hpz_partition_size = hpz;
  if (c.paper) {
    o.gather.persistence_threshold = 0;
    o.gather.max_reuse_distance = 0;
  }
  return o;
}

TEST(Hpz, BitwiseStage3WithBackwardGathersInsideTheNode) {
  const int W = world().comm->world_size();
  if (W < 2 || W % 2) GTEST_SKIP() << "needs an even world";
  const ModelConfig model = tiny_model(true);
  for (const HpzCase c : {HpzCase{1, false, true}, HpzCase{1, true, true}, HpzCase{3, true, true}, HpzCase{1, true, false}}) {
    if (kGlobalBatch % (W * c.accum)) continue;
    SCOPED_TRACE("accum " + std::to_string(c.accum) + (c.overlap ? " overlap" : "") + (c.paper ? " paper" : " defaults"));
    const RunResult flat = run_engine(model, hpz_options(c, 1), 3);
    const RunResult hpz = run_engine(model, hpz_options(c, node_size()), 3);
    EXPECT_EQ(hpz.losses, flat.losses);
    EXPECT_EQ(hpz.norms, flat.norms);
    EXPECT_EQ(hpz.summary.checksum, flat.summary.checksum);
    Engine probe(model, hpz_options(c, node_size()), *world().backend, *world().comm);
    const LinkBytes want = probe.expected_link_bytes_per_step();
    for (size_t s = 0; s < hpz.stats.size(); ++s) {
      const StepStats& h = hpz.stats[s];
      const StepStats& f = flat.stats[s];
      EXPECT_EQ(h.comm_bytes[int(CommOp::AllGather)], f.comm_bytes[int(CommOp::AllGather)]) << "the same gathers";
      EXPECT_EQ(h.comm_bytes[int(CommOp::ReduceScatter)], f.comm_bytes[int(CommOp::ReduceScatter)]);
      EXPECT_EQ(h.comm_links.intra, want.intra);
      EXPECT_EQ(h.comm_links.inter, want.inter);
      // The job's links carry (W-1)/W of each world call on W hops, and (G-1)/G of each group call
      // on every group's G hops (W/G groups).
      const int G = node_size();
      uint64_t world = 0, group = 0;
      for (int i = 0; i < kCommOpCount; ++i) {
        const uint64_t k = CommOp(i) == CommOp::AllReduce ? 2 : 1;
        world += k * (h.comm_bytes[i] - h.groups.by_role[int(CommRole::Secondary)].bytes[i]);
        group += k * h.groups.by_role[int(CommRole::Secondary)].bytes[i];
      }
      EXPECT_EQ(h.comm_links.total(), world * uint64_t(W - 1) + group * uint64_t(G - 1) * uint64_t(W) / uint64_t(G));
      if (c.paper && W >= 4) {
        EXPECT_LT(h.comm_links.inter, f.comm_links.inter) << "backward gathers stay in the node";
      }
    }
    // The secondary copy: one 1/hpz slice of every padded unit, as parameters.
    uint64_t slices = 0;
    for (int u = 0; u < probe.shard_map().units(); ++u) slices += uint64_t(probe.shard_map().shard(u).padded / (node_size())) * 4;
    EXPECT_EQ(hpz.resident[MemCategory::Params], flat.resident[MemCategory::Params] + slices);
  }
}

// A unit with fewer elements than N·n (the final layer norm of a model of width 2: 4 parameters)
// pads like any other: hpZ stays bitwise stage 3 and its link bytes equal the predictor's.
TEST(Hpz, UnitSmallerThanTheWorldTimesTheNode) {
  const int W = world().comm->world_size();
  if (W < 2 || W % 2) GTEST_SKIP() << "needs an even world";
  ModelConfig model = tiny_model(true);
  model.dim = 2;
  model.heads = 1;
  const HpzCase c{1, true, true};
  Engine probe(model, hpz_options(c, node_size()), *world().backend, *world().comm);
  int64_t smallest = INT64_MAX;
  for (int u = 0; u < probe.shard_map().units(); ++u) smallest = std::min(smallest, probe.shard_map().shard(u).numel);
  if (smallest >= int64_t(W) * node_size()) GTEST_SKIP() << "no unit below N·n at this world (4 ranks have one)";
  const RunResult flat = run_engine(model, hpz_options(c, 1), 3);
  const RunResult hpz = run_engine(model, hpz_options(c, node_size()), 3);
  EXPECT_EQ(hpz.losses, flat.losses);
  EXPECT_EQ(hpz.norms, flat.norms);
  EXPECT_EQ(hpz.summary.checksum, flat.summary.checksum);
  const LinkBytes want = probe.expected_link_bytes_per_step();
  for (const StepStats& st : hpz.stats) {
    EXPECT_EQ(st.comm_links.intra, want.intra);
    EXPECT_EQ(st.comm_links.inter, want.inter);
  }
}

// params_from_master between steps (what a checkpoint load and --init-from end with): afterwards
// the run is the uninterrupted one's, bit for bit.
TEST(Hpz, RewrittenParametersContinueBitwise) {
  const int W = world().comm->world_size();
  if (W < 2 || W % 2) GTEST_SKIP() << "needs an even world";
  const ModelConfig model = tiny_model(true);
  const HpzCase c{1, true, true};
  const RunResult straight = run_engine(model, hpz_options(c, 1), 4);
  World& w = world();
  Engine engine(model, hpz_options(c, node_size()), *w.backend, *w.comm);
  BatchSampler sampler(w.data.train, model.seq_len, 7);
  const EngineOptions o = hpz_options(c, node_size());
  const BatchGeometry geom{W, o.micro_batch, o.grad_accum};
  std::vector<double> losses;
  for (int s = 0; s < 4; ++s) {
    if (s == 2) engine.params_from_master();
    losses.push_back(engine.train_step([&](int micro, int32_t* tok, int32_t* tgt) {
      sampler.fill(s, geom, w.comm->rank(), micro, tok, tgt);
    }).loss);
  }
  EXPECT_EQ(losses, straight.losses);
  EXPECT_EQ(engine.param_summary().checksum, straight.summary.checksum);
}

}  // namespace
}  // namespace zt::test
