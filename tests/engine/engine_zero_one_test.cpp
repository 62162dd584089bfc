// 0/1 Adam in the engine (stage 0) at 1–4 ranks: DeepSpeed's counters against a transcription of
// its control flow and against literal sequences worked by hand; the step records follow the
// schedule (variance steps all-reduce, the steps between them and the syncs send one compressed
// call, local steps neither) with the predictor's bytes for each kind; every rank holds the same
// parameters after every step but the local ones, in fp32, bf16 and fp16; the synced point and the
// errors on the ledger as the plan says; and the loss trains close to AdamW's. Resume:
// tests/cli/zero_one_test.py.
#include <gtest/gtest.h>

#include "runtime/engine/engine_plan.h"
#include "runtime/zero/zero_one_adam.h"
#include "tests/engine/engine_test_util.h"

namespace zt::test {
namespace {

using Kind = ZeroOneSchedule::Kind;

OptimizerOptions schedule_options(int64_t var_freeze, int64_t var_scaler, int64_t local_scaler, int64_t clipper) {
  OptimizerOptions o;
  o.type = OptimizerType::ZeroOneAdam;
  o.var_freeze_step = var_freeze;
  o.var_update_scaler = var_scaler;
  o.local_step_scaler = local_scaler;
  o.local_step_clipper = clipper;
  return o;
}

// DeepSpeed's zoadam.py step() as control flow: the state counters, the freeze key set at the end
// of a step, and the engine's all-reduce flag the optimizer leaves for the next step.
struct DeepSpeedTranscript {
  int64_t var_interval = 1, var_counter = 0, local_interval = 1, local_counter = 0, step = 0;
  bool initialize = false, freeze_key = false, allreduce = true;
  Kind next(const OptimizerOptions& o) {
    ++step;
    if (!initialize) {  // the dry run: the counters are dropped with the errors and start afresh
      initialize = true;
      return Kind::DryRun;
    }
    Kind k;
    if (!freeze_key) {
      k = step % var_interval == 0 ? Kind::Variance : Kind::CompressedGradient;
      EXPECT_EQ(allreduce, k == Kind::Variance) << "step " << step << ": the engine's flag agrees with the optimizer";
    } else {
      k = step % local_interval == 0 ? Kind::Sync : Kind::Local;
      EXPECT_FALSE(allreduce);
    }
    if (!freeze_key) {
      if (step % var_interval == 0 && ++var_counter == o.var_update_scaler) {
        var_counter = 0;
        var_interval *= 2;
      }
      allreduce = (step + 1) % var_interval == 0;
    } else if (++local_counter == o.local_step_scaler) {
      local_counter = 0;
      local_interval = std::min(o.local_step_clipper, 2 * local_interval);
    }
    if (step > o.var_freeze_step) {
      freeze_key = true;
      allreduce = false;
    }
    return k;
  }
};

std::vector<int64_t> steps_of(const ZeroOneSchedule& s, Kind k, int64_t last) {
  std::vector<int64_t> out;
  for (int64_t i = 1; i <= last; ++i)
    if (s.kind(i) == k) out.push_back(i);
  return out;
}

TEST(ZeroOneSchedule, MatchesDeepSpeedsControlFlow) {
  for (const OptimizerOptions& o : {schedule_options(100000, 16, 32678, 16), schedule_options(40, 3, 4, 4),
                                    schedule_options(0, 1, 1, 1), schedule_options(1, 2, 3, 8), schedule_options(200, 5, 7, 16)}) {
    ZeroOneSchedule s(o);
    DeepSpeedTranscript ds;
    for (int64_t step = 1; step <= 600; ++step) ASSERT_EQ(s.kind(step), ds.next(o)) << "step " << step;
    // Asked out of order (a resumed run) it answers the same.
    DeepSpeedTranscript again;
    std::vector<Kind> want;
    for (int64_t step = 1; step <= 300; ++step) want.push_back(again.next(o));
    for (int64_t step : {250, 3, 120, 299, 1, 77})
      EXPECT_EQ(s.kind(step), want[size_t(step - 1)]) << "step " << step << " after a jump";
  }
}

TEST(ZeroOneSchedule, HandWorkedSequences) {
  // var_update_scaler 2: intervals 1 (steps 2, 3), 2 (4, 6), 4 (8, 12), 8 (16, 24), 16 (32, ...).
  const ZeroOneSchedule a(schedule_options(100000, 2, 32678, 16));
  EXPECT_EQ(steps_of(a, Kind::Variance, 40), (std::vector<int64_t>{2, 3, 4, 6, 8, 12, 16, 24, 32}));
  EXPECT_EQ(a.kind(1), Kind::DryRun);
  // Frozen after var_freeze_step 10 (from step 12); local_step_scaler 2, clipper 4: the interval is
  // 1 for steps 12–13, 2 for 14–15, then 4 (clipped): syncs at 12, 13, 14, 16, 20, 24.
  const ZeroOneSchedule b(schedule_options(10, 2, 2, 4));
  EXPECT_FALSE(b.frozen(11));
  EXPECT_TRUE(b.frozen(12));
  EXPECT_EQ(steps_of(b, Kind::Sync, 25), (std::vector<int64_t>{12, 13, 14, 16, 20, 24}));
  EXPECT_EQ(steps_of(b, Kind::Variance, 11), (std::vector<int64_t>{2, 3, 4, 6, 8}));
  // DeepSpeed's defaults: the first 16 variance updates every step, then every other step.
  const ZeroOneSchedule d(schedule_options(100000, 16, 32678, 16));
  EXPECT_EQ(d.kind(17), Kind::Variance);
  EXPECT_EQ(d.kind(18), Kind::Variance);
  EXPECT_EQ(d.kind(19), Kind::CompressedGradient);
}

EngineOptions zero_one_options(int var_freeze, int accum = 1) {
  EngineOptions o = base_options(0, accum, DType::F32, false);
  o.optimizer.type = OptimizerType::ZeroOneAdam;
  o.optimizer.lr = 3e-3;
  o.optimizer.weight_decay = 0.01;
  o.optimizer.var_freeze_step = var_freeze;
  o.optimizer.var_update_scaler = 2;  // variance steps 2, 3, 4, 6, 8, 12, ...
  o.optimizer.local_step_scaler = 2;  // frozen: syncs every 1, 2, then 4 steps
  o.optimizer.local_step_clipper = 4;
  return o;
}

TEST(ZeroOneAdam, StepsFollowTheScheduleWithThePredictorsBytes) {
  World& w = world();
  const int W = w.comm->world_size();
  const ModelConfig model = tiny_model(true);
  const EngineOptions o = zero_one_options(10);
  const ZeroOneSchedule sched(o.optimizer);
  Engine engine(model, o, *w.backend, *w.comm);
  BatchSampler sampler(w.data.train, model.seq_len, 7);
  const BatchGeometry geom{W, o.micro_batch, o.grad_accum};
  const uint64_t state_bytes = engine.ledger().current()[MemCategory::Optimizer];
  const uint64_t before = engine.param_summary().checksum;
  const LinkBytes want[3] = {engine.expected_link_bytes_per_step(StepComm::Exact),
                             engine.expected_link_bytes_per_step(StepComm::Compressed),
                             engine.expected_link_bytes_per_step(StepComm::Local)};
  int seen[5] = {};
  bool local_differs = false;
  for (int s = 1; s <= 24; ++s) {
    SCOPED_TRACE("step " + std::to_string(s));
    const Kind kind = sched.kind(s);
    ++seen[int(kind)];
    const StepComm comm = engine.step_comm_next();
    EXPECT_EQ(comm, kind == Kind::DryRun || kind == Kind::Variance ? StepComm::Exact
                    : kind == Kind::Local                          ? StepComm::Local
                                                                   : StepComm::Compressed);
    const StepStats st = engine.train_step([&](int micro, int32_t* tok, int32_t* tgt) {
      sampler.fill(s - 1, geom, w.comm->rank(), micro, tok, tgt);
    });
    EXPECT_TRUE(std::isfinite(st.loss));
    EXPECT_EQ(st.optimizer_comm, comm);
    if (s == 1) {
      EXPECT_EQ(engine.param_summary().checksum, before) << "the dry run changes no parameter";
    }
    const std::vector<int64_t> sums = rank_checksums(engine);
    for (int r = 1; r < W && kind != Kind::Local; ++r)
      EXPECT_EQ(sums[size_t(r)], sums[0]) << "rank " << r << " differs after a non-local step";
    if (kind == Kind::Local && W > 1)
      local_differs = local_differs || std::any_of(sums.begin(), sums.end(), [&](int64_t x) { return x != sums[0]; });
    if (W == 1) continue;
    const LinkBytes& b = want[int(comm)];
    EXPECT_EQ(st.comm_links.intra, b.intra);
    EXPECT_EQ(st.comm_links.inter, b.inter);
    EXPECT_EQ(st.comm_bytes[int(CommOp::AllReduce)] > 0, comm == StepComm::Exact);
    EXPECT_EQ(st.comm_bytes[int(CommOp::AllToAll)] > 0, comm == StepComm::Compressed);
  }
  for (Kind k : {Kind::DryRun, Kind::Variance, Kind::CompressedGradient, Kind::Local, Kind::Sync})
    EXPECT_GT(seen[int(k)], 0) << "every kind of step ran (kind " << int(k) << ")";
  if (W > 1) {
    EXPECT_TRUE(local_differs) << "local steps update each rank from its own gradients";
    EXPECT_LT(double(want[1].total()), double(want[0].total()) / 16) << "a compressed step: about 1/32 of fp32's";
    EXPECT_LT(want[2].total(), want[1].total()) << "a local step moves only the flag, norm and loss";
  }
  // The synced point (any world size) and the errors (several ranks) on the ledger, as the plan says.
  const EnginePlan plan(model, o, BackendCaps::cpu(), W, w.comm->rank());
  EXPECT_EQ(engine.ledger().current()[MemCategory::Optimizer], state_bytes + plan.optimizer_extra_bytes());
  EXPECT_GE(plan.optimizer_extra_bytes(), uint64_t(engine.params()) * 4);
}

TEST(ZeroOneAdam, EveryRankEqualAfterSyncsWithAccumulationInEachPrecision) {
  World& w = world();
  const int W = w.comm->world_size();
  const ModelConfig model = tiny_model(true);
  for (DType prec : {DType::F32, DType::BF16, DType::F16}) {
    const int accum = kGlobalBatch % (W * 2) == 0 ? 2 : 1;
    EngineOptions o = zero_one_options(6, accum);
    o.zero.precision = prec;
    o.update.loss_scaler.initial_scale_power = 8;
    const ZeroOneSchedule sched(o.optimizer);
    Engine engine(model, o, *w.backend, *w.comm);
    BatchSampler sampler(w.data.train, model.seq_len, 7);
    const BatchGeometry geom{W, o.micro_batch, o.grad_accum};
    for (int s = 0; s < 16; ++s) {
      const int64_t applied = engine.applied_steps();
      engine.train_step([&](int micro, int32_t* tok, int32_t* tgt) { sampler.fill(s, geom, w.comm->rank(), micro, tok, tgt); });
      if (engine.applied_steps() == applied || sched.kind(applied + 1) == Kind::Local) continue;
      const std::vector<int64_t> sums = rank_checksums(engine);
      for (int r = 1; r < W; ++r)
        EXPECT_EQ(sums[size_t(r)], sums[0]) << dtype_name(prec) << " rank " << r << " after update " << applied + 1;
    }
    EXPECT_GE(engine.applied_steps(), 10) << dtype_name(prec) << ": the frozen phase ran";
  }
}

// A learning rate of 0 (a schedule's end) makes lrs 0 at every sync: DeepSpeed's m = −u/lrs would be
// 0/0; here the momentum stays, nothing moves and every loss stays finite.
TEST(ZeroOneAdam, ZeroLearningRateKeepsEverythingFinite) {
  World& w = world();
  const ModelConfig model = tiny_model(true);
  EngineOptions o = zero_one_options(2);
  o.optimizer.lr = 0.0;
  o.optimizer.weight_decay = 0.0;
  Engine engine(model, o, *w.backend, *w.comm);
  const uint64_t before = engine.param_summary().checksum;
  BatchSampler sampler(w.data.train, model.seq_len, 7);
  const BatchGeometry geom{w.comm->world_size(), o.micro_batch, o.grad_accum};
  for (int s = 0; s < 10; ++s) {
    const StepStats st = engine.train_step([&](int micro, int32_t* tok, int32_t* tgt) {
      sampler.fill(s, geom, w.comm->rank(), micro, tok, tgt);
    });
    EXPECT_TRUE(std::isfinite(st.loss)) << "step " << s + 1;
  }
  EXPECT_EQ(engine.param_summary().checksum, before);
}

// The loss of a short run beside AdamW's (the same data, lr and decay): no worse than 3% above it.
TEST(ZeroOneAdam, TrainsCloseToAdamW) {
  const ModelConfig model = tiny_model(true);
  const int steps = 40;
  EngineOptions adam = zero_one_options(8);
  adam.optimizer.type = OptimizerType::AdamW;
  const RunResult a = run_engine(model, adam, steps);
  const RunResult b = run_engine(model, zero_one_options(8), steps);
  const double la = mean_of_last(a.losses, 5), lb = mean_of_last(b.losses, 5);
  EXPECT_LT(lb, b.losses.front() * 0.8) << "0/1 Adam trains";
  EXPECT_LT(lb, la * 1.03) << "AdamW " << la << " vs 0/1 Adam " << lb;
}

}  // namespace
}  // namespace zt::test
