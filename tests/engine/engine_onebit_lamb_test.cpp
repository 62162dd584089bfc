// 1-bit LAMB in the engine (stage 0) at 1–4 ranks: DeepSpeed's phases by the step records (the dry
// run changes nothing; warm-up all-reduces; afterwards one compressed call a step for the whole
// model, with the predictor's bytes); every rank holds the same parameters after every step, in
// fp32, bf16 and fp16; the factor of every tensor inside its bounds and within factor_threshold of
// the last step's; the fresh variance and the flat momentum on the ledger as the plan says; and the
// loss trains close to LAMB's. Resume: tests/cli/onebit_lamb_test.py.
#include <gtest/gtest.h>

#include "runtime/engine/engine_plan.h"
#include "runtime/zero/onebit_lamb.h"
#include "tests/engine/engine_test_util.h"

namespace zt::test {
namespace {

EngineOptions lamb_options(int freeze_step, int accum = 1) {
  EngineOptions o = base_options(0, accum, DType::F32, false);
  o.optimizer.type = OptimizerType::OneBitLamb;
  o.optimizer.lr = 2e-2;  // LAMB's steps are lr · ‖p‖-sized: tiny trains slowly at Adam's 3e-3
  o.optimizer.freeze_step = freeze_step;
  o.optimizer.weight_decay = 0.01;
  return o;
}

TEST(OneBitLamb, PhasesBytesAndFactorBounds) {
  World& w = world();
  const int W = w.comm->world_size();
  const ModelConfig model = tiny_model(true);
  const int freeze = 4;
  const EngineOptions o = lamb_options(freeze);
  Engine engine(model, o, *w.backend, *w.comm);
  auto* lamb = dynamic_cast<OneBitLamb*>(engine.compressed_optimizer());
  ASSERT_NE(lamb, nullptr);
  BatchSampler sampler(w.data.train, model.seq_len, 7);
  const BatchGeometry geom{W, o.micro_batch, o.grad_accum};
  const uint64_t state_bytes = engine.ledger().current()[MemCategory::Optimizer];
  const uint64_t before = engine.param_summary().checksum;
  const LinkBytes exact_want = engine.expected_link_bytes_per_step(StepComm::Exact);
  const LinkBytes comp_want = engine.expected_link_bytes_per_step(StepComm::Compressed);
  std::vector<double> last;
  for (int s = 1; s <= 12; ++s) {
    SCOPED_TRACE("step " + std::to_string(s));
    const bool exact = engine.exact_gradients_next_step();
    EXPECT_EQ(exact, s <= freeze);
    const StepStats st = engine.train_step([&](int micro, int32_t* tok, int32_t* tgt) {
      sampler.fill(s - 1, geom, w.comm->rank(), micro, tok, tgt);
    });
    EXPECT_TRUE(std::isfinite(st.loss));
    if (s == 1) {
      EXPECT_EQ(engine.param_summary().checksum, before) << "the dry run changes no parameter";
      EXPECT_TRUE(lamb->lamb_coeffs().empty());
    } else {
      EXPECT_EQ(lamb->lamb_coeffs().size(), lamb->last_factors().size()) << "a coefficient per tensor";
    }
    const std::vector<int64_t> sums = rank_checksums(engine);
    for (int r = 1; r < W; ++r) EXPECT_EQ(sums[size_t(r)], sums[0]) << "rank " << r << " differs";
    if (!exact) {  // DeepSpeed's factor bounds, absolute and relative to the last step's
      for (size_t k = 0; k < lamb->last_factors().size(); ++k) {
        const double f = lamb->last_factors()[k], prev = last.empty() ? 1.0 : last[k];
        EXPECT_GE(f, o.optimizer.factor_min - 1e-12);
        EXPECT_LE(f, o.optimizer.factor_max + 1e-12);
        EXPECT_LE(f, prev * (1 + o.optimizer.factor_threshold) + 1e-12) << "tensor " << k;
        EXPECT_GE(f, prev * (1 - o.optimizer.factor_threshold) - 1e-12) << "tensor " << k;
      }
      last = lamb->last_factors();
    }
    if (W == 1) continue;
    const LinkBytes& b = exact ? exact_want : comp_want;
    EXPECT_EQ(st.comm_links.intra, b.intra);
    EXPECT_EQ(st.comm_links.inter, b.inter);
    EXPECT_EQ(st.comm_calls[int(CommOp::AllToAll)], exact ? 0u : 1u) << "one compressed call for the whole model";
    EXPECT_EQ(st.comm_bytes[int(CommOp::AllReduce)] > 0, exact);
  }
  if (W > 1) EXPECT_LT(double(comp_want.total()), double(exact_want.total()) / 16);
  const EnginePlan plan(model, o, BackendCaps::cpu(), W, w.comm->rank());
  EXPECT_EQ(engine.ledger().current()[MemCategory::Optimizer], state_bytes + plan.optimizer_extra_bytes());
}

TEST(OneBitLamb, EveryRankEqualWithAccumulationInEachPrecision) {
  World& w = world();
  const int W = w.comm->world_size();
  const ModelConfig model = tiny_model(true);
  for (DType prec : {DType::F32, DType::BF16, DType::F16}) {
    const int accum = kGlobalBatch % (W * 2) == 0 ? 2 : 1;
    EngineOptions o = lamb_options(3, accum);
    o.zero.precision = prec;
    o.update.loss_scaler.initial_scale_power = 8;
    Engine engine(model, o, *w.backend, *w.comm);
    BatchSampler sampler(w.data.train, model.seq_len, 7);
    const BatchGeometry geom{W, o.micro_batch, o.grad_accum};
    int compressed = 0;
    for (int s = 0; s < 10; ++s) {
      compressed += !engine.exact_gradients_next_step();
      engine.train_step([&](int micro, int32_t* tok, int32_t* tgt) { sampler.fill(s, geom, w.comm->rank(), micro, tok, tgt); });
      const std::vector<int64_t> sums = rank_checksums(engine);
      for (int r = 1; r < W; ++r) EXPECT_EQ(sums[size_t(r)], sums[0]) << dtype_name(prec) << " rank " << r << " step " << s + 1;
    }
    EXPECT_GE(compressed, 3) << dtype_name(prec) << ": the compressed phase ran";
  }
}

// The loss of a short run beside LAMB's without bias correction (DeepSpeed's 1-bit LAMB never
// corrects): no worse than 10% above it. On tiny the frozen trust ratio and one scale for the whole
// model move the loss by −14% (one rank) to +3% (four) at 40 steps; the 3% goal is measured
// on `small` over 300 steps (bench/RESULTS.md: 9% below LAMB).
TEST(OneBitLamb, TrainsCloseToLamb) {
  const ModelConfig model = tiny_model(true);
  const int steps = 40;
  EngineOptions lamb = lamb_options(8);
  lamb.optimizer.type = OptimizerType::Lamb;
  lamb.optimizer.bias_correction = false;
  const RunResult a = run_engine(model, lamb, steps);
  const RunResult b = run_engine(model, lamb_options(8), steps);
  const double la = mean_of_last(a.losses, 5), lb = mean_of_last(b.losses, 5);
  EXPECT_LT(lb, b.losses.front() * 0.8) << "1-bit LAMB trains";
  EXPECT_LT(lb, la * 1.10) << "LAMB " << la << " vs 1-bit LAMB " << lb;
}

}  // namespace
}  // namespace zt::test
