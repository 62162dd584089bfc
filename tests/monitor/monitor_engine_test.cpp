// The comms logger and the flops profiler on real engine steps (1, 2 and 4 ranks): the logger's
// totals are the communicator's own accounting and the steps' bytes; the FLOPs counted per op add
// up, unit by unit, to the analytic GPT-2 formula (6Ψ_w + 2Ψ_b per token + causal attention), for
// every stage, with accumulation and with recompute, and to the Llama formula on the tiny Llama
// models; recording the ops changes no bit.
#include <gtest/gtest.h>

#include <numeric>

#include "runtime/data/sampler.h"
#include "runtime/monitor/comms_logger.h"
#include "runtime/monitor/flops_profiler.h"
#include "tests/engine/engine_test_util.h"

namespace zt::test {
namespace {

struct Stepped {
  std::vector<StepStats> stats;
  ParamSummary summary;
};

// Trains `steps` steps on `backend`; `around(step, phase)` runs before (0) and after (1) each step.
template <class Around>
Stepped train(const ModelConfig& model, const EngineOptions& o, Backend& backend, int steps, Around around) {
  World& w = world();
  Engine engine(model, o, backend, *w.comm);
  BatchSampler sampler(w.data.train, model.seq_len, 7);
  const BatchGeometry geom{w.comm->world_size(), o.micro_batch, o.grad_accum};
  Stepped r;
  for (int s = 0; s < steps; ++s) {
    around(s + 1, 0, StepStats{});
    const StepStats st = engine.train_step(
        [&](int micro, int32_t* tok, int32_t* tgt) { sampler.fill(s, geom, w.comm->rank(), micro, tok, tgt); });
    around(s + 1, 1, st);
    r.stats.push_back(st);
  }
  r.summary = engine.param_summary();
  return r;
}

class CommsTotals : public ::testing::TestWithParam<int> {};

TEST_P(CommsTotals, LoggerTotalsAreTheCommunicatorsAccountingAndTheStepBytes) {
  const int stage = GetParam();
  Communicator& comm = *world().comm;
  CommsLoggerConfig c;
  c.enabled = true;
  const CommStats start = comm.stats();
  CommsLogger logger(c, comm.world_size(), start);
  uint64_t step_bytes[kCommOpCount] = {}, step_calls[kCommOpCount] = {};
  uint64_t verbose_rows = 0;
  CommStats before;
  EngineOptions o = base_options(stage, 1, DType::F32, true);
  train(tiny_model(), o, *world().backend, 3, [&](int step, int phase, const StepStats& st) {
    if (phase == 0) {
      before = comm.stats();
      return;
    }
    for (int i = 0; i < kCommOpCount; ++i) step_bytes[i] += st.comm_bytes[i], step_calls[i] += st.comm_calls[i];
    for (const auto& r : logger.rows(before, comm.stats())) verbose_rows += r.calls;
    EXPECT_FALSE(logger.step_lines(step, before, comm.stats()).empty() && comm.world_size() > 1);
  });
  // The summary covers everything since the logger started, param_summary's gathers included.
  const CommStats end = comm.stats();
  uint64_t logged_bytes[kCommOpCount] = {}, logged_calls[kCommOpCount] = {};
  double logged_s[kCommOpCount] = {};
  for (const auto& r : logger.totals(end)) {
    logged_bytes[int(r.op)] += r.calls * r.message_bytes;
    logged_calls[int(r.op)] += r.calls;
    logged_s[int(r.op)] += r.seconds;
  }
  uint64_t all_steps_calls = 0;
  for (int i = 0; i < kCommOpCount; ++i) {
    EXPECT_EQ(logged_bytes[i], end.op[i].bytes - start.op[i].bytes) << comm_op_name(CommOp(i));
    EXPECT_EQ(logged_calls[i], end.op[i].calls - start.op[i].calls) << comm_op_name(CommOp(i));
    EXPECT_NEAR(logged_s[i], end.op[i].busy_seconds - start.op[i].busy_seconds, 1e-9);
    all_steps_calls += step_calls[i];
  }
  // The steps' own bytes: all-reduce and reduce-scatter only happen in steps; the all-gathers of
  // the checksum come after them.
  EXPECT_EQ(logged_bytes[int(CommOp::AllReduce)], step_bytes[int(CommOp::AllReduce)]);
  EXPECT_EQ(logged_bytes[int(CommOp::ReduceScatter)], step_bytes[int(CommOp::ReduceScatter)]);
  EXPECT_GE(logged_bytes[int(CommOp::AllGather)], step_bytes[int(CommOp::AllGather)]);
  EXPECT_EQ(verbose_rows, all_steps_calls);
  EXPECT_GT(all_steps_calls, 0u);
}

INSTANTIATE_TEST_SUITE_P(Monitor, CommsTotals, ::testing::Values(0, 1, 2, 3),
                         [](const auto& info) { return "stage" + std::to_string(info.param); });

struct FlopsCase {
  int stage, grad_accum;
  bool recompute, tied;
};

class FlopsCount : public ::testing::TestWithParam<FlopsCase> {};

TEST_P(FlopsCount, PerUnitFlopsAreTheAnalyticGpt2Formula) {
  const FlopsCase fc = GetParam();
  const ModelConfig model = tiny_model(fc.tied);
  EngineOptions o = base_options(fc.stage, fc.grad_accum, DType::F32, true);
  o.checkpoint_activations = fc.recompute;
  FlopsProfilerConfig c;
  c.enabled = true;
  c.profile_step = 1;
  Backend& backend = *world().backend;
  FlopsProfiler profiler(c, model, o.micro_batch, o.grad_accum, world().comm->world_size(),
                         device_peak(backend, o.micro_batch * model.seq_len, model.dim));
  std::optional<FlopsProfile> profile;
  // As the run reporter does: the recorder attached for the profiled step only.
  const Stepped with = train(model, o, backend, 3, [&](int step, int phase, const StepStats& st) {
    if (phase == 0) {
      backend.attach_op_recorder(profiler.before_step(step));
      return;
    }
    backend.attach_op_recorder(nullptr);
    if (auto p = profiler.after_step(step, st.seconds)) profile = p;
  });
  ASSERT_TRUE(profile.has_value());
  const FlopsProfile& p = *profile;
  EXPECT_EQ(p.step, 2);
  ASSERT_TRUE(p.attributed) << p.note;
  ASSERT_EQ(p.units.size(), size_t(model.units()));

  const int64_t L = model.layers, C = model.dim, V = model.vocab, T = model.seq_len;
  const int64_t seqs = int64_t(o.micro_batch) * o.grad_accum;
  const double tokens = double(seqs * T);
  const Gpt2Flops f = gpt2_training_flops(L, C, V, T, seqs, fc.recompute);
  // The closed form written out here, not through op_flops: 6 FLOPs per weight of the linear layers
  // (12LC² in the blocks, VC in the head) per token, 2 per bias per token (9LC: forward 1, backward
  // 1), and causal attention's 4·C per (query, key) pair forward and 8·C backward in each layer.
  const double pairs = double(T) * double(T + 1) / 2.0;
  const double closed_form = 6.0 * (12.0 * L * C * C + double(V) * C) * tokens + 2.0 * 9.0 * L * C * tokens +
                             12.0 * double(L) * double(seqs) * double(C) * pairs;
  EXPECT_DOUBLE_EQ(f.model(), closed_form);
  EXPECT_DOUBLE_EQ(p.gemm_attention_flops, closed_form) << "the recorded GEMM and attention ops of the step";
  EXPECT_DOUBLE_EQ(p.analytic_flops, closed_form);
  EXPECT_DOUBLE_EQ(p.recompute_flops > 0 ? p.recompute_flops : 0.0,
                   fc.recompute ? f.recompute + L * (2 * 5.0 * C + 4.0 * C + 2.0 * C) * tokens : 0.0)
      << "recompute re-runs each block's forward: GEMMs, attention, two layernorms, GELU and two residuals";
  // Unit by unit: a block is 24C²+18C per token forward... written out from the layer shapes.
  const double block_fwd_gemm = (2.0 * 12 * C * C + 9.0 * C) * tokens + attention_forward_flops(seqs, T, C);
  const double block_fwd_other = (2 * 5.0 * C + 4.0 * C + 2.0 * C) * tokens;  // 2 layernorms, GELU on 4C, 2 residuals
  const double block_bwd = (4.0 * 12 * C * C + 9.0 * C) * tokens + attention_backward_flops(seqs, T, C) +
                           (2 * 10.0 * C + 2 * 4.0 * C) * tokens;  // 2 layernorm backwards, GELU backward on 4C
  for (int u = 1; u <= L; ++u) {
    const UnitProfile& b = p.units[size_t(u)];
    EXPECT_EQ(b.params, model.block_params());
    EXPECT_DOUBLE_EQ(b.forward_flops, block_fwd_gemm + block_fwd_other) << b.name;
    EXPECT_DOUBLE_EQ(b.backward_flops, block_bwd) << b.name;
  }
  const UnitProfile& emb = p.units.front();
  EXPECT_DOUBLE_EQ(emb.forward_flops, double(C) * tokens);
  EXPECT_DOUBLE_EQ(emb.backward_flops, 2.0 * C * tokens);
  const UnitProfile& head = p.units.back();
  EXPECT_DOUBLE_EQ(head.forward_flops, (5.0 * C + 2.0 * V * C + 2.0 * V) * tokens);  // lnf, LM head, CE
  EXPECT_DOUBLE_EQ(head.backward_flops, (4.0 * V * C + 10.0 * C) * tokens);
  // Outside the units only the engine's own ops: gradient accumulation (stages 0–1 add every
  // micro-step's gradient in place; stages 2–3 add the reduced shard), the norm partials, scaling
  // and the optimizer — never a model op.
  for (const auto& op : p.outside) {
    const bool engine_op = op.kind == OpKind::Accumulate || op.kind == OpKind::SumSquares || op.kind == OpKind::Scale ||
                           op.kind == OpKind::AdamW || op.kind == OpKind::AdamWMultiTensor || !op_computes(op.kind);
    EXPECT_TRUE(engine_op) << op_kind_name(op.kind);
  }
  EXPECT_GT(p.forward_s, 0.0);
  EXPECT_GT(p.peak.flops_per_s, 0.0);
  EXPECT_FALSE(profiler.render(p).empty());

  // Recording changes no result: the same run with no recorder attached is bitwise equal.
  const Stepped plain = train(model, o, *world().backend, 3, [](int, int, const StepStats&) {});
  EXPECT_EQ(with.summary.checksum, plain.summary.checksum);
  for (size_t i = 0; i < plain.stats.size(); ++i) EXPECT_EQ(with.stats[i].loss, plain.stats[i].loss);
}

INSTANTIATE_TEST_SUITE_P(Monitor, FlopsCount,
                         ::testing::Values(FlopsCase{0, 1, false, true}, FlopsCase{2, 1, false, true},
                                           FlopsCase{3, 1, false, false}, FlopsCase{3, 3, false, true},
                                           FlopsCase{1, 3, true, true}),
                         [](const auto& info) {
                           const FlopsCase& c = info.param;
                           return "stage" + std::to_string(c.stage) + "_accum" + std::to_string(c.grad_accum) +
                                  (c.recompute ? "_recompute" : "") + (c.tied ? "_tied" : "_untied");
                         });

// The same on Llama: every op the profiler records adds up, unit by unit, to the layer shapes; the
// GEMM and attention part is llama_training_flops' closed form (GQA shrinking only the k and v
// projections), which is what the MFU is measured with before the profiled step (and equals the
// recorded model FLOPs' GEMM and attention part after it).
class LlamaFlopsCount : public ::testing::TestWithParam<FlopsCase> {};

TEST_P(LlamaFlopsCount, PerUnitFlopsAreTheAnalyticLlamaFormula) {
  const FlopsCase fc = GetParam();
  const ModelConfig model = tiny_llama_model(fc.tied);
  EngineOptions o = base_options(fc.stage, fc.grad_accum, DType::F32, true);
  o.checkpoint_activations = fc.recompute;
  FlopsProfilerConfig c;
  c.enabled = true;
  c.profile_step = 1;
  Backend& backend = *world().backend;
  FlopsProfiler profiler(c, model, o.micro_batch, o.grad_accum, world().comm->world_size(),
                         device_peak(backend, o.micro_batch * model.seq_len, model.dim));
  const double L = model.layers, C = model.dim, V = model.vocab, T = model.seq_len, H = model.heads,
               Hkv = model.kv_head_count(), hd = model.head_width(), I = model.intermediate;
  const double seqs = double(o.micro_batch) * o.grad_accum, tokens = seqs * T;
  // Written out from the shapes: q, k, v rows (H + 2 Hkv)·hd, o_proj H·hd, gate, up and down I wide,
  // the LM head V rows; 6 FLOPs per weight per token; attention 4·(H·hd) per (query, key) pair
  // forward and 8·(H·hd) backward in each layer.
  const double block_w = (H + 2 * Hkv) * hd * C + C * H * hd + 3 * I * C;
  const double pairs = T * (T + 1) / 2.0;
  const double closed_form = 6.0 * (L * block_w + V * C) * tokens + 12.0 * L * seqs * H * hd * pairs;
  EXPECT_DOUBLE_EQ(profiler.model_flops_per_step(), closed_form) << "the MFU's FLOPs before the profiled step";
  std::optional<FlopsProfile> profile;
  train(model, o, backend, 3, [&](int step, int phase, const StepStats& st) {
    if (phase == 0) {
      backend.attach_op_recorder(profiler.before_step(step));
      return;
    }
    backend.attach_op_recorder(nullptr);
    if (auto p = profiler.after_step(step, st.seconds)) profile = p;
  });
  ASSERT_TRUE(profile.has_value());
  const FlopsProfile& p = *profile;
  ASSERT_TRUE(p.attributed) << p.note;
  ASSERT_EQ(p.units.size(), size_t(model.units()));
  EXPECT_DOUBLE_EQ(p.gemm_attention_flops, closed_form) << "the recorded GEMM and attention ops of the step";
  EXPECT_DOUBLE_EQ(p.analytic_flops, closed_form);
  EXPECT_DOUBLE_EQ(p.mfu(), p.model_flops() / p.step_s / p.peak.flops_per_s);
  // Per block and token: 2 RMSNorms (4C each), RoPE on the q and k heads (3 per element), SwiGLU
  // (2 per output), 2 residual adds; backward 8C per RMSNorm, RoPE's transpose, 4 per SwiGLU output.
  const double rope = 3.0 * (H + Hkv) * hd;
  const double attention_fwd = 4.0 * H * hd * pairs * seqs, attention_bwd = 8.0 * H * hd * pairs * seqs;
  const double block_fwd_other = (2 * 4.0 * C + rope + 2.0 * I + 2.0 * C) * tokens;
  const double block_fwd = 2.0 * block_w * tokens + attention_fwd + block_fwd_other;
  const double block_bwd = 4.0 * block_w * tokens + attention_bwd + (2 * 8.0 * C + rope + 4.0 * I) * tokens;
  for (int u = 1; u <= model.layers; ++u) {
    const UnitProfile& b = p.units[size_t(u)];
    EXPECT_EQ(b.params, model.block_params());
    EXPECT_DOUBLE_EQ(b.forward_flops, block_fwd) << b.name;
    EXPECT_DOUBLE_EQ(b.backward_flops, block_bwd) << b.name;
  }
  EXPECT_DOUBLE_EQ(p.recompute_flops, fc.recompute ? L * block_fwd : 0.0);
  EXPECT_DOUBLE_EQ(p.units.front().forward_flops, C * tokens);
  EXPECT_DOUBLE_EQ(p.units.front().backward_flops, 2.0 * C * tokens);
  EXPECT_DOUBLE_EQ(p.units.back().forward_flops, (4.0 * C + 2.0 * V * C + 2.0 * V) * tokens);  // norm, LM head, CE
  EXPECT_DOUBLE_EQ(p.units.back().backward_flops, (4.0 * V * C + 8.0 * C) * tokens);
  EXPECT_NE(profiler.render(p).find("Llama ("), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Monitor, LlamaFlopsCount,
                         ::testing::Values(FlopsCase{0, 1, false, false}, FlopsCase{3, 1, true, true}),
                         [](const auto& info) {
                           const FlopsCase& c = info.param;
                           return "stage" + std::to_string(c.stage) + (c.recompute ? "_recompute" : "") +
                                  (c.tied ? "_tied" : "_untied");
                         });

}  // namespace
}  // namespace zt::test
