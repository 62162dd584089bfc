// Optimizers and precision in the engine (run at 1 and 2 ranks): SGD (momentum, Nesterov), Adam
// with L2 and Lamb give bitwise-equal training in every stage; emulated fp16 skips overflowing steps
// with DeepSpeed's dynamic scaler alike in every stage; and at one rank the engine equals a plain
// single-process loop written from the model and the optimizer functions directly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "optim/adam.h"
#include "optim/grad_clip.h"
#include "optim/lamb.h"
#include "optim/sgd.h"
#include "runtime/config/config_load.h"
#include "runtime/train/engine_config.h"
#include "runtime/model/gpt2.h"
#include "runtime/model/init.h"
#include "tests/engine/engine_test_util.h"

namespace zt::test {
namespace {

constexpr int kSteps = 6;

void expect_stages_equal(const EngineOptions& base, const char* what) {
  const ModelConfig model = tiny_model();
  std::vector<RunResult> r;
  for (int stage = 0; stage <= 3; ++stage) {
    EngineOptions o = base;
    o.zero.stage = stage;
    r.push_back(run_engine(model, o, kSteps));
  }
  for (int stage = 1; stage <= 3; ++stage) {
    EXPECT_EQ(r[stage].summary.checksum, r[0].summary.checksum) << what << ", stage " << stage;
    EXPECT_EQ(r[stage].losses, r[0].losses) << what << ", stage " << stage;
    EXPECT_EQ(r[stage].skipped, r[0].skipped) << what << ", stage " << stage;
  }
  EXPECT_TRUE(std::isfinite(r[0].summary.l2)) << what;
}

TEST(EngineOptimizers, SgdWithNesterovMomentumIsStageIndependent) {
  EngineOptions o = base_options(0, 1, DType::F32, true);
  o.optimizer.type = OptimizerType::SGD;
  o.optimizer.lr = 0.05;
  o.optimizer.momentum = 0.9;
  o.optimizer.nesterov = true;
  o.optimizer.weight_decay = 1e-4;
  expect_stages_equal(o, "SGD");
}

TEST(EngineOptimizers, AdamWithL2IsStageIndependent) {
  EngineOptions o = base_options(0, 1, DType::F32, false);
  o.optimizer.type = OptimizerType::AdamL2;
  expect_stages_equal(o, "Adam L2");
}

TEST(EngineOptimizers, LambTrustRatiosAcrossShardsAreStageIndependent) {
  EngineOptions o = base_options(0, 1, DType::F32, true);
  o.optimizer.type = OptimizerType::Lamb;
  o.optimizer.lr = 1e-2;
  o.optimizer.weight_decay = 0.01;
  expect_stages_equal(o, "Lamb");
}

TEST(EngineFp16, OverflowingStepsAreSkippedAndTheScaleFallsAlikeInEveryStage) {
  EngineOptions o = base_options(0, 1, DType::F16, true);
  o.update.loss_scaler.initial_scale_power = 22;  // 2^22 × gradients overflows fp16's 65504 at once
  o.update.loss_scaler.hysteresis = 1;
  const RunResult r = run_engine(tiny_model(), o, kSteps);
  EXPECT_GT(r.skipped, 0);
  EXPECT_LT(r.skipped, kSteps) << "the scale must come down until steps apply";
  EXPECT_FALSE(r.stats.back().skipped);
  EXPECT_TRUE(r.stats[0].skipped);
  EXPECT_EQ(r.stats[1].loss_scale, r.stats[0].loss_scale / 2);
  expect_stages_equal(o, "fp16");
}

TEST(EngineDtypes, CommunicationDataTypeIsHonouredInEveryStage) {
  EngineOptions o = base_options(0, 1, DType::F32, true);
  const RunResult fp32_comm = run_engine(tiny_model(), o, kSteps);
  o.zero.comm_precision = DType::BF16;  // fp32 training, gradients sent as bf16
  expect_stages_equal(o, "bf16 communication");
  const RunResult bf16_comm = run_engine(tiny_model(), o, kSteps);
  EXPECT_NE(bf16_comm.summary.checksum, fp32_comm.summary.checksum) << "communication_data_type had no effect";
}

TEST(EngineDtypes, GradAccumDtypeIsHonouredInEveryStage) {
  if (world().comm->world_size() != 1) GTEST_SKIP() << "with accumulation, stages agree bitwise only at one rank";
  EngineOptions o = base_options(0, 3, DType::BF16, true);
  const RunResult bf16_accum = run_engine(tiny_model(), o, kSteps);
  // bf16 training, micro-step gradients summed and sent in fp32. (With fp32 accumulation but bf16
  // communication the stages differ by design: stages 0–1 send the fp32 sum once, rounded to bf16;
  // stages 2–3 send every micro-step's bf16 gradient.)
  o.zero.grad_accum_precision = DType::F32;
  o.zero.comm_precision = DType::F32;
  expect_stages_equal(o, "fp32 accumulation");
  const RunResult fp32_accum = run_engine(tiny_model(), o, kSteps);
  EXPECT_NE(fp32_accum.summary.checksum, bf16_accum.summary.checksum) << "grad_accum_dtype had no effect";
}

TEST(EngineDtypes, Fp32AccumulationOfBf16CommunicationAgreesInStages2And3AndIsNotBf16Accumulation) {
  // DeepSpeed's common mixed setting: bf16 training and communication, gradients accumulated in
  // fp32 over 3 micro-steps. Stages 2–3 reduce-scatter every micro-step's bf16 gradient and add it
  // to the fp32 shard: the two stages do the same arithmetic, at any world size, bit for bit.
  const int W = world().comm->world_size();
  const int accum = kGlobalBatch % (W * 3) == 0 ? 3 : 2;  // 3 ranks: 12 rows split only 2 ways more
  EngineOptions o = base_options(2, accum, DType::BF16, true);
  o.zero.comm_precision = DType::BF16;
  o.zero.grad_accum_precision = DType::F32;
  const RunResult s2 = run_engine(tiny_model(), o, kSteps);
  o.zero.stage = 3;
  const RunResult s3 = run_engine(tiny_model(), o, kSteps);
  EXPECT_EQ(s3.summary.checksum, s2.summary.checksum);
  EXPECT_EQ(s3.losses, s2.losses);
  EXPECT_EQ(s3.norms, s2.norms);
  // Accumulating in the communication type instead rounds every partial sum to bf16: a different
  // training (the fp32 sum must not be rounded where it is kept).
  o.zero.grad_accum_precision = DType::BF16;
  const RunResult bf16_accum = run_engine(tiny_model(), o, kSteps);
  EXPECT_NE(bf16_accum.summary.checksum, s3.summary.checksum) << "the fp32 accumulation was rounded to bf16";
  EXPECT_NE(bf16_accum.norms, s3.norms);
}

TEST(EngineRecompute, ActivationCheckpointingSavesMemoryAndChangesNothing) {
  for (int stage : {0, 3}) {
    EngineOptions o = base_options(stage, 1, DType::F32, true);
    const RunResult kept = run_engine(tiny_model(), o, 3);
    o.checkpoint_activations = true;
    const RunResult recomputed = run_engine(tiny_model(), o, 3);
    EXPECT_EQ(recomputed.summary.checksum, kept.summary.checksum) << "stage " << stage;
    EXPECT_EQ(recomputed.losses, kept.losses) << "stage " << stage;
    EXPECT_LT(recomputed.resident[MemCategory::Activations], kept.resident[MemCategory::Activations])
        << "stage " << stage;
  }
}

TEST(EngineSchedule, OneCycleFromAConfigDrivesLrAndBeta1) {
  LoadOptions lo;
  const auto r = load_config_text(R"({"train_micro_batch_size_per_gpu": 1, "optimizer": {"type": "AdamW",
      "params": {"lr": 0.001}}, "scheduler": {"type": "OneCycle", "params": {"cycle_min_lr": 0.0001,
      "cycle_max_lr": 0.01, "cycle_first_step_size": 10, "cycle_min_mom": 0.85, "cycle_max_mom": 0.95}}})",
                                  "onecycle.json", lo);
  ASSERT_TRUE(r.valid()) << r.diagnostics.format();
  const EngineOptions o = engine_options_from_config(r.config, 1, false);
  ASSERT_NE(o.update.scheduler, nullptr);
  // DeepSpeed: the first step runs at cycle_min_lr with beta1 = cycle_min_mom. Applied step k uses
  // scheduler iteration k-1, whose cycle position is b = k (DeepSpeed's last_batch_iteration + 1):
  // halfway up at k = 5 (lr midway, beta1 midway down), the top at k = 10 (cycle_max_lr, beta1 at
  // cycle_min_mom: momentum cycles inversely).
  EXPECT_DOUBLE_EQ(o.update.scheduler->lr_for_step(0), 0.0001);
  EXPECT_DOUBLE_EQ(*o.update.scheduler->beta1_for_step(0), 0.85);
  EXPECT_NEAR(o.update.scheduler->lr_for_step(5), 0.0001 + (0.01 - 0.0001) * 0.5, 1e-12);
  EXPECT_NEAR(*o.update.scheduler->beta1_for_step(5), 0.95 - (0.95 - 0.85) * 0.5, 1e-12);
  EXPECT_NEAR(o.update.scheduler->lr_for_step(10), 0.01, 1e-12);
  EXPECT_NEAR(*o.update.scheduler->beta1_for_step(10), 0.85, 1e-12);
}

TEST(EngineTrace, TimelineHasEveryUnitAndTheStagesCollectives) {
  for (int stage : {0, 3}) {
    EngineOptions o = base_options(stage, 1, DType::F32, true);
    o.trace = true;
    o.gather.max_reuse_distance = 0;
    o.gather.persistence_threshold = 0;
    auto& w = world();
    const ModelConfig mc = tiny_model(false);
    Engine engine(mc, o, *w.backend, *w.comm);
    BatchSampler sampler(w.data.train, mc.seq_len, 7);
    const BatchGeometry geom{w.comm->world_size(), o.micro_batch, 1};
    engine.train_step([&](int m, int32_t* t, int32_t* g) { sampler.fill(0, geom, w.comm->rank(), m, t, g); });
    ASSERT_NE(engine.trace(), nullptr);
    const auto j = engine.trace()->to_json(w.comm->rank());
    std::map<std::string, int> count;
    std::vector<std::string> buckets;  // gradient bucket spans: "<op> bucket k: unit+unit"
    const std::string grad_op = stage == 0 ? "all_reduce bucket " : "reduce_scatter bucket ";
    for (const auto& e : j["traceEvents"]) {
      if (e["ph"] != "X") continue;
      EXPECT_GE(e["dur"].get<double>(), 0.0);
      const std::string name = e["name"].get<std::string>();
      count[name]++;
      if (name.rfind(grad_op, 0) == 0) buckets.push_back(name);
    }
    EXPECT_EQ(int64_t(buckets.size()), engine.grad_buckets()) << "one span per gradient bucket, stage " << stage;
    auto in_a_bucket = [&](const std::string& unit) {
      for (const auto& b : buckets) {
        const std::string units = "+" + b.substr(b.find(": ") + 2) + "+";
        if (units.find("+" + unit + "+") != std::string::npos) return true;
      }
      return false;
    };
    for (const char* name : {"embedding", "block0", "block1", "head"}) {
      EXPECT_EQ(count[std::string("forward ") + name], 1) << name << " stage " << stage;
      EXPECT_EQ(count[std::string("backward ") + name], 1) << name << " stage " << stage;
      EXPECT_TRUE(in_a_bucket(name)) << name << "'s gradient is in no bucket, stage " << stage;
      if (stage == 3) EXPECT_EQ(count[std::string("all_gather ") + name], 2) << name << ": forward and backward";
    }
    EXPECT_EQ(count["optimizer step"], 1);
  }
}

TEST(EngineTrace, TiedEmbeddingIsKeptForTheHeadWithinTheReuseDistance) {
  // Stage 3, tied head: the head's forward and backward use the embedding's parameters. With a
  // reuse distance just above the blocks between the embedding and the head, the embedding stays
  // gathered from its forward through the head to its own backward: one gather per step. (Counted
  // as if only the embedding unit used it, its next use is its backward, past the distance: it
  // would be released and gathered again for the head, twice.)
  auto& w = world();
  const ModelConfig mc = tiny_model(/*tied=*/true);
  EngineOptions o = base_options(3, 1, DType::F32, true);
  o.trace = true;
  o.gather.persistence_threshold = 0;
  Engine engine(mc, o, *w.backend, *w.comm);
  const int U = engine.shard_map().units();
  int64_t blocks = 0;
  for (int u = 1; u < U - 1; ++u) blocks += engine.shard_map().shard(u).numel;
  o.gather.max_reuse_distance = blocks + 1;
  Engine tuned(mc, o, *w.backend, *w.comm);
  BatchSampler sampler(w.data.train, mc.seq_len, 7);
  const BatchGeometry geom{w.comm->world_size(), o.micro_batch, 1};
  tuned.train_step([&](int m, int32_t* t, int32_t* g) { sampler.fill(0, geom, w.comm->rank(), m, t, g); });
  ASSERT_NE(tuned.trace(), nullptr);
  const auto j = tuned.trace()->to_json(w.comm->rank());
  int gathers = 0;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "X" && e["name"] == "all_gather embedding") ++gathers;
  EXPECT_EQ(gathers, 1) << "the tied embedding was released before the head used it";
}

TEST(EngineAveraging, PredivideAndPrescaleGiveTheMean) {
  // Scaling by powers of two is exact, so dividing before the reduction by 4 (predivide) or by the
  // world size (prescale, W = 1 or 2) and restoring the mean after it must give the same bits as
  // dividing by the world size after the reduction alone. A wrong post-scale changes the update.
  EngineOptions o = base_options(2, 1, DType::F32, true);
  const RunResult ref = run_engine(tiny_model(), o, 3);
  EngineOptions pre = o;
  pre.gradient_predivide_factor = 4.0;
  const RunResult predivided = run_engine(tiny_model(), pre, 3);
  EXPECT_EQ(predivided.summary.checksum, ref.summary.checksum);
  EXPECT_EQ(predivided.norms, ref.norms);
  if (world().comm->world_size() == 1) return;  // prescaling divides by W: nothing to see at one rank
  EngineOptions ps = o;
  ps.prescale_gradients = true;
  ps.gradient_predivide_factor = 3.0;  // ignored under prescale_gradients, as in DeepSpeed
  const RunResult prescaled = run_engine(tiny_model(), ps, 3);
  EXPECT_EQ(prescaled.summary.checksum, ref.summary.checksum);
  EXPECT_EQ(prescaled.norms, ref.norms);
}

// The engine's parameter summary, written again here from its definition (engine.h: FNV-1a 64
// over the fp32 parameters in unit order, their L2 in double) so that the plain loop's parameters
// are compared bit for bit, not through the engine's own code.
ParamSummary summarize(const std::vector<std::vector<float>>& units) {
  ParamSummary out;
  uint64_t h = 1469598103934665603ull;
  double sq = 0;
  for (const auto& p : units) {
    for (float x : p) {
      uint32_t bits;
      std::memcpy(&bits, &x, 4);
      for (int b = 0; b < 4; ++b) h = (h ^ ((bits >> (8 * b)) & 0xffu)) * 1099511628211ull;
      sq += double(x) * double(x);
    }
    out.count += int64_t(p.size());
  }
  out.checksum = h;
  out.l2 = std::sqrt(sq);
  return out;
}

// The plain loop: whole-model buffers, forward_backward, per-unit squared norms, clip, update.
RunResult reference_loop(const ModelConfig& mc, const EngineOptions& o, int steps) {
  auto& w = world();
  GPT2 model(mc, *w.backend, ModelRunOptions{o.micro_batch, false});
  const int U = model.num_units();
  std::vector<std::vector<float>> p(U), g(U), m(U), v(U);
  std::vector<void*> pp, gp;
  for (int u = 0; u < U; ++u) {
    const int64_t n = model.layout(u).numel;
    p[u].resize(n);
    init_unit_params(model.layout(u), o.seed, 0, n, p[u].data());
    g[u].assign(n, 0);
    m[u].assign(n, 0);
    v[u].assign(n, 0);
    pp.push_back(p[u].data());
    gp.push_back(g[u].data());
  }
  BatchSampler sampler(w.data.train, mc.seq_len, 7);
  const BatchGeometry geom{1, o.micro_batch, 1};
  std::vector<int32_t> tok(size_t(o.micro_batch) * mc.seq_len), tgt(tok.size());
  RunResult r;
  for (int s = 0; s < steps; ++s) {
    for (auto& x : g) std::fill(x.begin(), x.end(), 0.0f);
    sampler.fill(s, geom, 0, 0, tok.data(), tgt.data());
    model.set_batch(tok.data(), tgt.data(), o.micro_batch, mc.seq_len, 1.0f);
    r.losses.push_back(forward_backward(model, pp, gp));
    double sq = 0;
    for (int u = 0; u < U; ++u) sq += sum_squares(g[u]);
    r.norms.push_back(std::sqrt(sq));
    const float scale = float(unscale_and_clip_multiplier(std::sqrt(sq), 1.0, o.update.gradient_clipping));
    for (int u = 0; u < U; ++u) {
      if (o.optimizer.type == OptimizerType::SGD) {
        SgdHyper h{float(o.optimizer.lr), float(o.optimizer.momentum), 0.0f, float(o.optimizer.weight_decay),
                   o.optimizer.nesterov, s + 1, scale};
        sgd_step(p[u], g[u], m[u], h);
      } else if (o.optimizer.type == OptimizerType::Lamb) {
        LambHyper h;
        h.lr = float(o.optimizer.lr);
        h.weight_decay = float(o.optimizer.weight_decay);
        h.step = s + 1;
        h.grad_scale = scale;
        std::vector<LambPiece> pieces;
        for (size_t t = 0; t < model.layout(u).tensors.size(); ++t)
          pieces.push_back({size_t(model.layout(u).tensors[t].offset), size_t(model.layout(u).tensors[t].numel),
                            int64_t(t)});
        lamb_step(p[u], g[u], m[u], v[u], pieces, h);
      } else {
        AdamWHyper h;
        h.lr = float(o.optimizer.lr);
        h.weight_decay = float(o.optimizer.weight_decay);
        h.step = s + 1;
        h.grad_scale = scale;
        adam_step(p[u], g[u], m[u], v[u], h);
      }
    }
  }
  r.summary = summarize(p);
  return r;
}

TEST(EngineReference, OneRankEqualsAPlainLoopForAdamWSgdAndLamb) {
  if (world().comm->world_size() != 1) GTEST_SKIP() << "the plain loop is single-process";
  for (OptimizerType t : {OptimizerType::AdamW, OptimizerType::SGD, OptimizerType::Lamb}) {
    SCOPED_TRACE(optimizer_type_name(t));
    EngineOptions o = base_options(3, 1, DType::F32, false);
    o.optimizer.type = t;
    o.optimizer.momentum = t == OptimizerType::SGD ? 0.9 : 0.0;
    o.optimizer.nesterov = false;
    const ModelConfig mc = tiny_model();
    const RunResult engine = run_engine(mc, o, kSteps);
    const RunResult ref = reference_loop(mc, o, kSteps);
    ASSERT_EQ(engine.losses.size(), ref.losses.size());
    for (int s = 0; s < kSteps; ++s) EXPECT_EQ(float(engine.losses[s]), float(ref.losses[s])) << "step " << s;
    // The norms that drive clipping, and the parameters themselves, bit for bit: the same
    // fixed-order sums and the same element formulas, whatever code path the engine takes.
    ASSERT_EQ(engine.norms.size(), ref.norms.size());
    for (int s = 0; s < kSteps; ++s) EXPECT_EQ(engine.norms[s], ref.norms[s]) << "grad norm, step " << s;
    EXPECT_EQ(engine.summary.count, ref.summary.count);
    EXPECT_EQ(engine.summary.checksum, ref.summary.checksum) << "parameters after " << kSteps << " steps";
    EXPECT_EQ(engine.summary.l2, ref.summary.l2);
  }
}

}  // namespace
}  // namespace zt::test
