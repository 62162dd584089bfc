// The engine as a ShardedState, in one process: every array written by range reads back the same
// in every placement (backend memory, CPU offload, NVMe records) and stage, ranges outside the
// rank's are refused, commit() makes the consolidated parameters the master that was written and
// rebuilds the working copy from it (the next step's loss is the written weights' loss), and the
// counters (with the fp16 scaler) round-trip.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "collectives/single_communicator.h"
#include "kernels/backend.h"
#include "runtime/checkpoint/checkpoint_load.h"
#include "collectives/rank_exchange.h"
#include "runtime/engine/engine_checkpoint.h"
#include "runtime/model/gpt2.h"
#include "tests/checkpoint/ckpt_test_util.h"

namespace zt {
namespace {

struct Placement {
  const char* name;
  int stage;
  DType precision;
  OffloadDevice optimizer, param;
};

// The swap folder, removed after the engine (declared before it) has closed its nameless files.
struct SwapDir {
  std::string path = "/tmp/zt_engine_state_" + std::to_string(::getpid());
  SwapDir() { ::mkdir(path.c_str(), 0700); }
  ~SwapDir() { ::rmdir(path.c_str()); }
};

float pattern(const std::string& array, int unit, int64_t e) {
  return float(int(array.size()) * 7 + unit * 131 + int(e % 977)) * 1e-3f - 0.5f;
}

uint64_t fnv(const std::vector<UnitLayout>& units, const std::string& array) {
  uint64_t h = 1469598103934665603ull;
  for (const auto& u : units)
    for (int64_t e = 0; e < u.numel; ++e) {
      const float v = pattern(array, u.index, e);
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      for (int b = 0; b < 4; ++b) h = (h ^ ((bits >> (8 * b)) & 0xffu)) * 1099511628211ull;
    }
  return h;
}

// The engine options of a placement: two rows per micro-step, sub-groups of 100 elements (several
// NVMe records per unit: ranges cross record boundaries), swap files under `swap`.
EngineOptions options_for(const Placement& p, const SwapDir& swap) {
  EngineOptions o;
  o.zero.stage = p.stage;
  o.zero.precision = p.precision;
  o.micro_batch = 2;
  o.sub_group_size = 100;
  o.zero.offload_optimizer = p.optimizer;
  o.zero.offload_param = p.param;
  if (p.optimizer == OffloadDevice::NVMe) o.offload.state.nvme_path = swap.path;
  if (p.param == OffloadDevice::NVMe) o.offload.params.nvme_path = swap.path;
  return o;
}

class EngineState : public ::testing::TestWithParam<Placement> {};

TEST_P(EngineState, WritesReadBackAndCommitRebuildsTheParams) {
  const Placement& p = GetParam();
  SwapDir swap;
  auto backend = make_cpu_backend();
  SingleCommunicator comm;
  const EngineOptions o = options_for(p, swap);
  const ModelConfig m = test::small_model();
  Engine engine(m, o, *backend, comm);
  EngineCheckpoint st(engine, m);
  ASSERT_EQ(st.arrays(), (std::vector<std::string>{"master", "exp_avg", "exp_avg_sq"}));
  // Written in pieces of 37 elements (any order is allowed; pieces cross sub-group records).
  for (const auto& a : st.arrays())
    for (const ElementRange& r : st.needed())
      for (int64_t b = r.begin; b < r.end(); b += 37) {
        const ElementRange piece{r.unit, b, std::min<int64_t>(37, r.end() - b)};
        std::vector<float> v(size_t(piece.n));
        for (int64_t i = 0; i < piece.n; ++i) v[size_t(i)] = pattern(a, piece.unit, piece.begin + i);
        st.write(a, piece, v.data());
      }
  st.commit();
  int64_t bad = 0;
  for (const auto& a : st.arrays())
    for (const ElementRange& r : st.owned()) {
      std::vector<float> v(size_t(r.n));
      st.read(a, r, v.data());
      for (int64_t i = 0; i < r.n; ++i) bad += v[size_t(i)] != pattern(a, r.unit, r.begin + i);
    }
  EXPECT_EQ(bad, 0) << p.name;
  // The consolidated parameters are the master that was written (param_summary reads the master);
  // and the next step trains from the rebuilt working copy without error.
  EXPECT_EQ(engine.param_summary().checksum, fnv(st.units(), "master")) << p.name;
  std::vector<int32_t> tok(size_t(o.micro_batch) * m.seq_len, 3);
  const StepStats s = engine.train_step([&](int, int32_t* t, int32_t* g) {
    std::copy(tok.begin(), tok.end(), t);
    std::copy(tok.begin(), tok.end(), g);
  });
  // The step's loss comes from the working copy before the update: it must be the loss of the
  // written master, computed here by the model alone (fp32: the same bits; 16-bit placements
  // round the working copy, within 1%). Stale working parameters (the initial ones) are far off.
  GPT2 ref_model(m, *backend, ModelRunOptions{o.micro_batch, false});
  std::vector<std::vector<float>> rp(size_t(ref_model.num_units())), rg(rp.size());
  std::vector<void*> pp, gp;
  for (int u = 0; u < ref_model.num_units(); ++u) {
    const int64_t n = ref_model.layout(u).numel;
    for (int64_t e = 0; e < n; ++e) rp[size_t(u)].push_back(pattern("master", u, e));
    rg[size_t(u)].assign(size_t(n), 0.0f);
    pp.push_back(rp[size_t(u)].data());
    gp.push_back(rg[size_t(u)].data());
  }
  ref_model.set_batch(tok.data(), tok.data(), o.micro_batch, m.seq_len, 1.0f);
  const float ref_loss = forward_backward(ref_model, pp, gp);
  ASSERT_TRUE(std::isfinite(ref_loss));
  if (p.precision == DType::F32) EXPECT_EQ(float(s.loss), ref_loss) << p.name;
  else EXPECT_NEAR(s.loss, ref_loss, 1e-2 * std::fabs(ref_loss)) << p.name;
  // A range outside the rank's is a caller's bug, refused before anything is touched.
  const ElementRange beyond{0, st.units()[0].numel - 1, 2};
  std::vector<float> two(2);
  EXPECT_THROW(st.read("master", beyond, two.data()), std::logic_error);
  EXPECT_THROW(st.write("exp_avg", beyond, two.data()), std::logic_error);
}

INSTANTIATE_TEST_SUITE_P(
    Placements, EngineState,
    ::testing::Values(Placement{"stage0_fp32", 0, DType::F32, OffloadDevice::None, OffloadDevice::None},
                      Placement{"stage1_bf16", 1, DType::BF16, OffloadDevice::None, OffloadDevice::None},
                      Placement{"stage2_fp16_cpu_offload", 2, DType::F16, OffloadDevice::CPU, OffloadDevice::None},
                      Placement{"stage3_fp32", 3, DType::F32, OffloadDevice::None, OffloadDevice::None},
                      Placement{"stage3_bf16_cpu_param", 3, DType::BF16, OffloadDevice::CPU, OffloadDevice::CPU},
                      Placement{"stage3_nvme", 3, DType::F32, OffloadDevice::NVMe, OffloadDevice::NVMe},
                      Placement{"stage1_nvme", 1, DType::BF16, OffloadDevice::NVMe, OffloadDevice::None}),
    [](const auto& info) { return std::string(info.param.name); });

// A checkpoint load into the engine reads straight into the optimizer's own host storage wherever
// the state is host memory (write_target), and through write() for NVMe records; the loaded state
// is the saved one either way.
TEST(EngineStateLoad, ReadsStraightIntoTheOptimizersHostMemory) {
  test::TempDir dir;
  const ModelConfig m = test::small_model();
  test::save_fake(dir.path(), m, 1, 0, 5);
  test::FakeShardedState saved(m, 1, 0, 0);
  saved.fill(5);
  const Placement placements[] = {{"stage0_fp32", 0, DType::F32, OffloadDevice::None, OffloadDevice::None},
                                  {"stage3_bf16_cpu", 3, DType::BF16, OffloadDevice::CPU, OffloadDevice::CPU},
                                  {"stage2_nvme", 2, DType::F32, OffloadDevice::NVMe, OffloadDevice::None}};
  for (const Placement& p : placements) {
    SwapDir swap;
    auto backend = make_cpu_backend();
    SingleCommunicator comm;
    Engine engine(m, options_for(p, swap), *backend, comm);
    EngineCheckpoint st(engine, m);
    RankExchange ex(comm);
    ckpt::LoadOptions lo;
    lo.path = dir.path();
    lo.load_counters = false;
    const ckpt::LoadResult res = ckpt::load_checkpoint(st, ex, lo);
    ASSERT_GT(res.bytes_needed, 0u) << p.name;
    EXPECT_EQ(res.bytes_in_place, p.optimizer == OffloadDevice::NVMe ? 0u : res.bytes_needed) << p.name;
    int64_t bad = 0;
    for (const auto& a : st.arrays())
      for (const ElementRange& r : st.owned()) {
        std::vector<float> got(size_t(r.n)), want(size_t(r.n));
        st.read(a, r, got.data());
        saved.read(a, r, want.data());
        bad += int64_t(std::mismatch(got.begin(), got.end(), want.begin()).first != got.end());
      }
    EXPECT_EQ(bad, 0) << p.name << ": ranges whose loaded state differs from the saved one";
  }
}

TEST(EngineStateCounters, RoundTripWithTheLossScaler) {
  auto backend = make_cpu_backend();
  SingleCommunicator comm;
  EngineOptions o;
  o.zero.precision = DType::F16;
  const ModelConfig m = test::small_model();
  Engine engine(m, o, *backend, comm);
  EngineCheckpoint st(engine, m);
  const nlohmann::json saved = {{"step", 7}, {"applied_steps", 5}, {"skipped_steps", 2}, {"lr", o.optimizer.lr},
                                {"loss_scaler", {{"scale", 1024.0}, {"cur_hysteresis", 1}, {"cur_iter", 7},
                                                 {"last_overflow_iter", 4}}},
                                {"note", "kept"}};
  st.set_counters(saved);
  EXPECT_TRUE(st.warnings().all().empty());
  EXPECT_EQ(st.counters(), saved);
  EXPECT_EQ(engine.counters().scaler->last_overflow_iter, 4);
  // Counters that do not add up, or of the wrong type, are refused with the key.
  EXPECT_THROW(st.set_counters({{"step", 7}, {"applied_steps", 5}, {"skipped_steps", 1}}), UserError);
  try {
    st.set_counters({{"step", "seven"}});
    ADD_FAILURE() << "accepted a string step";
  } catch (const UserError& e) {
    EXPECT_NE(e.diagnostics().format().find("counters.step"), std::string::npos) << e.diagnostics().format();
  }
  // A saved lr the schedule does not give: a warning naming it; no scaler state in an fp16 run's
  // load (a bf16 run's checkpoint): a warning that the scaler starts afresh.
  st.set_counters({{"step", 1}, {"applied_steps", 1}, {"skipped_steps", 0}, {"lr", 0.5}});
  ASSERT_EQ(st.warnings().warning_count(), 2u) << st.warnings().format();
  EXPECT_NE(st.warnings().format().find("counters.lr = 0.5"), std::string::npos) << st.warnings().format();
  EXPECT_NE(st.warnings().format().find("loss scaler starts afresh"), std::string::npos) << st.warnings().format();
}

}  // namespace
}  // namespace zt
