// Partition on its own, as a table: every stage 0–3 × world size 1–8 × every offload choice the stage
// allows (none; optimizer on the CPU or NVMe; stage 3 also parameters on the CPU or NVMe, and a
// partial optimizer offload) × alignment 1 and 16 × fp32 and bf16 training × four unit layouts (the
// tiny GPT-2's units with a tied and an untied head, sizes that no world size divides, larger
// primes). For every rank of every row: the shard ranges each rank owns (disjoint, covering each
// unit once, padding accounted), what is resident where (how many ranks hold each element of the
// params, grads and optimizer state), the stage's collectives, the norm and checkpoint ranges, the
// footprint, and expected_comm_bytes_per_step() against ZeRO's volumes — every expected value
// computed here from the layout, not through the helpers under test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/zero/partition.h"
#include "base/stage_traits.h"
#include "runtime/zero/zero_rules.h"
#include "tests/zero/zero_test_layouts.h"

namespace zt::test {
namespace {

struct Offload {
  std::string name;
  OffloadDevice optimizer = OffloadDevice::None;
  OffloadDevice param = OffloadDevice::None;
  double ratio = 1.0;
};

// The offload choices the config accepts for each stage (runtime/config/validate.cpp: optimizer
// offload needs stage >= 1, parameter offload and ratio < 1 need stage 3).
std::vector<Offload> offloads_for(int stage) {
  std::vector<Offload> o = {{"none"}};
  if (stage >= 1) {
    o.push_back({"opt_cpu", OffloadDevice::CPU});
    o.push_back({"opt_nvme", OffloadDevice::NVMe});
  }
  if (stage == 3) {
    o.push_back({"param_cpu+opt_cpu", OffloadDevice::CPU, OffloadDevice::CPU});
    o.push_back({"param_nvme+opt_nvme", OffloadDevice::NVMe, OffloadDevice::NVMe});
    o.push_back({"param_cpu+opt_nvme", OffloadDevice::NVMe, OffloadDevice::CPU});
    o.push_back({"opt_cpu_ratio0.5", OffloadDevice::CPU, OffloadDevice::None, 0.5});
    o.push_back({"opt_cpu_ratio0", OffloadDevice::CPU, OffloadDevice::None, 0.0});
  }
  return o;
}

struct Row {
  NamedLayout layout;
  int stage = 0, world = 1;
  int64_t alignment = 16;
  Offload offload;
  DType precision = DType::F32;
  std::string str() const {
    std::ostringstream s;
    s << layout.name << " stage" << stage << " W" << world << " align" << alignment << " " << offload.name << " "
      << (precision == DType::F32 ? "fp32" : "bf16");
    return s.str();
  }
};

std::vector<Row> table() {
  std::vector<Row> rows;
  for (const NamedLayout& l : all_layouts())
    for (int stage = 0; stage <= 3; ++stage)
      for (int W = 1; W <= 8; ++W)
        for (int64_t a : {int64_t(1), int64_t(16)})
          for (const Offload& o : offloads_for(stage))
            for (DType p : {DType::F32, DType::BF16}) rows.push_back({l, stage, W, a, o, p});
  return rows;
}

PartitionConfig config_of(const Row& r, int rank) {
  PartitionConfig c;
  c.stage = r.stage;
  c.world_size = r.world;
  c.rank = rank;
  c.alignment = r.alignment;
  c.optimizer = OptimizerType::AdamW;
  c.offload_optimizer = r.offload.optimizer;
  c.offload_param = r.offload.param;
  c.offload_ratio = r.offload.ratio;
  c.backend_is_host = true;
  c.precision = r.precision;
  return c;
}

// What one unit is on one rank, from the layout alone.
struct UnitExpect {
  int64_t numel, padded, shard, begin, valid;
};
UnitExpect expect_unit(const UnitSpec& u, int W, int64_t a, int rank) {
  UnitExpect e;
  e.numel = u.numel;
  e.padded = padded_len(u.numel, W, a);
  e.shard = e.padded / W;
  e.begin = e.shard * rank;
  e.valid = std::min(e.shard, std::max<int64_t>(0, u.numel - e.begin));
  return e;
}

// Adds 1 to count[i] for every i in [begin, begin + n) ∩ [0, count.size()); elements past the end
// land in `beyond` (a range running off the unit is a failure wherever it is not padding).
void cover(std::vector<int>& count, int64_t& beyond, int64_t begin, int64_t n) {
  for (int64_t i = begin; i < begin + n; ++i) {
    if (i >= 0 && i < int64_t(count.size())) ++count[size_t(i)];
    else ++beyond;
  }
}

// What each stage issues (the ZeRO paper's stages): {all_reduces_grads, reduces_each_micro_step,
// gathers_params_for_compute, gathers_params_after_update}.
struct Flags {
  bool all_reduce, each_micro, gather_compute, gather_after;
};
constexpr Flags kFlags[4] = {{true, false, false, false},   // 0: DDP — all-reduce at the boundary
                             {false, false, false, true},   // 1: reduce-scatter at the boundary, gather updated shards
                             {false, true, false, true},    // 2: reduce-scatter every micro-step, gather updated shards
                             {false, true, true, false}};   // 3: gather params around compute

TEST(PartitionTable, EveryStageWorldOffloadAndLayout) {
  const std::vector<Row> rows = table();
  ASSERT_EQ(rows.size(), size_t(4 * 8 * 2 * 2 * (1 + 3 + 3 + 8)));  // layouts × W × align × precision × offloads
  for (const Row& row : rows) {
    SCOPED_TRACE(row.str());
    const int W = row.world, s = row.stage;
    const int64_t a = row.alignment;
    const auto& units = row.layout.units;
    const int U = int(units.size());
    const int K = 2;  // AdamW: two moments

    std::vector<Partition> parts;
    for (int r = 0; r < W; ++r) parts.emplace_back(units, config_of(row, r));

    // Coverage across ranks per unit: how many ranks own / hold each real element.
    int64_t psi_padded = 0, psi = 0;
    for (int u = 0; u < U; ++u) {
      psi += units[size_t(u)].numel;
      psi_padded += padded_len(units[size_t(u)].numel, W, a);
    }

    for (int u = 0; u < U; ++u) {
      const int64_t numel = units[size_t(u)].numel;
      std::vector<int> owned(size_t(numel), 0), params(size_t(numel), 0), grads(size_t(numel), 0),
          state(size_t(numel), 0), norm_sharded(size_t(numel), 0);
      int64_t beyond_owned = 0, beyond_state = 0, beyond_norm = 0, padding = 0, dummy = 0;
      for (int r = 0; r < W; ++r) {
        const Partition& p = parts[size_t(r)];
        const UnitExpect e = expect_unit(units[size_t(u)], W, a, r);
        const UnitShard& sh = p.shard(u);
        // The shard map this rank sees.
        ASSERT_EQ(p.units(), U);
        EXPECT_EQ(sh.numel, e.numel) << "u" << u << " r" << r;
        EXPECT_EQ(sh.padded, e.padded) << "u" << u << " r" << r;
        EXPECT_EQ(sh.shard, e.shard) << "u" << u << " r" << r;
        EXPECT_EQ(sh.rank_begin, e.begin) << "u" << u << " r" << r;
        EXPECT_EQ(sh.valid, e.valid) << "u" << u << " r" << r;
        EXPECT_EQ(sh.rank_begin % a, 0) << "shards start at a multiple of the alignment";
        // Every rank's view of every other rank agrees with that rank's own.
        for (int q = 0; q < W; ++q) {
          EXPECT_EQ(p.map_of(q).shard(u).rank_begin, parts[size_t(q)].shard(u).rank_begin);
          EXPECT_EQ(p.map_of(q).shard(u).valid, parts[size_t(q)].shard(u).valid);
        }
        padding += e.shard - sh.valid;

        // What the rank keeps of the unit (the ZeRO paper's table): params full for 0–2, sharded
        // for 3; grads full for 0–1, sharded for 2–3; optimizer state full for 0, sharded for 1–3.
        const UnitPart& up = p.unit(u);
        const bool params_sharded = s == 3, grads_sharded = s >= 2, state_sharded = s >= 1;
        EXPECT_EQ(up.param_len, params_sharded ? e.shard : e.padded) << "u" << u << " r" << r;
        EXPECT_EQ(up.grad_len, grads_sharded ? e.shard : e.padded) << "u" << u << " r" << r;
        EXPECT_EQ(up.state_len, state_sharded ? e.shard : e.padded) << "u" << u << " r" << r;
        EXPECT_EQ(up.state_valid, state_sharded ? e.valid : e.numel) << "u" << u << " r" << r;
        EXPECT_EQ(up.state_begin, state_sharded ? e.begin : 0) << "u" << u << " r" << r;
        // Where state element 0 sits in a buffer that holds unit elements [base, base + len).
        const int64_t grad_base = grads_sharded ? e.begin : 0, param_base = params_sharded ? e.begin : 0;
        EXPECT_EQ(up.state_in_grad, up.state_begin - grad_base) << "u" << u << " r" << r;
        EXPECT_EQ(up.state_in_param, up.state_begin - param_base) << "u" << u << " r" << r;
        EXPECT_LE(up.state_in_grad + up.state_len, up.grad_len);
        EXPECT_LE(up.state_in_param + up.state_len, up.param_len);
        EXPECT_LE(up.state_valid, up.state_len);
        cover(params, dummy, param_base, std::min(up.param_len, std::max<int64_t>(0, numel - param_base)));
        cover(grads, dummy, grad_base, std::min(up.grad_len, std::max<int64_t>(0, numel - grad_base)));
        cover(state, beyond_state, up.state_begin, up.state_valid);

        // Checkpoint ranges: one per unit, this rank's real shard elements; stage 0 loads the unit.
        const std::vector<UnitRange> own = p.owned_ranges(), need = p.needed_ranges();
        ASSERT_EQ(own.size(), size_t(U));
        ASSERT_EQ(need.size(), size_t(U));
        EXPECT_EQ(own[size_t(u)].unit, u);
        EXPECT_EQ(own[size_t(u)].begin, e.begin);
        EXPECT_EQ(own[size_t(u)].n, e.valid);
        cover(owned, beyond_owned, own[size_t(u)].begin, own[size_t(u)].n);
        EXPECT_EQ(need[size_t(u)].unit, u);
        EXPECT_EQ(need[size_t(u)].begin, s == 0 ? 0 : e.begin);
        EXPECT_EQ(need[size_t(u)].n, s == 0 ? e.numel : e.valid);

        // Norm partials: stage 0 holds every rank's gradient and computes every rank's partial from
        // its full state arrays; stages 1–3 compute their own from their shard.
        const std::vector<int> nr = p.norm_ranks();
        if (s == 0) {
          ASSERT_EQ(nr.size(), size_t(W));
          for (int q = 0; q < W; ++q) EXPECT_EQ(nr[size_t(q)], q);
          std::vector<int> once(size_t(numel), 0);
          int64_t beyond = 0;
          for (int q : nr) {
            const UnitRange rr = p.norm_ranges(q).at(size_t(u));
            EXPECT_EQ(rr.unit, u);
            cover(once, beyond, up.state_begin + rr.begin, rr.n);  // offsets into the state arrays
          }
          EXPECT_EQ(beyond, 0);
          for (int64_t i = 0; i < numel; ++i) EXPECT_EQ(once[size_t(i)], 1) << "stage 0 norm, u" << u << " i" << i;
        } else {
          ASSERT_EQ(nr.size(), 1u);
          EXPECT_EQ(nr[0], r);
          const UnitRange rr = p.norm_ranges(r).at(size_t(u));
          EXPECT_EQ(rr.unit, u);
          EXPECT_EQ(rr.begin, 0);
          EXPECT_EQ(rr.n, e.valid);
          cover(norm_sharded, beyond_norm, up.state_begin + rr.begin, rr.n);
        }
      }
      // Across ranks: the owned ranges and the sharded norm ranges cover each real element exactly
      // once; the padding is the rest of the padded unit; resident copies per element as per stage.
      EXPECT_EQ(beyond_owned, 0) << "u" << u;
      EXPECT_EQ(beyond_state, 0) << "u" << u;
      EXPECT_EQ(beyond_norm, 0) << "u" << u;
      EXPECT_EQ(padding, padded_len(numel, W, a) - numel) << "u" << u;
      const int param_copies = s == 3 ? 1 : W, grad_copies = s >= 2 ? 1 : W, state_copies = s >= 1 ? 1 : W;
      for (int64_t i = 0; i < numel; ++i) {
        EXPECT_EQ(owned[size_t(i)], 1) << "owned, u" << u << " i" << i;
        EXPECT_EQ(params[size_t(i)], param_copies) << "params, u" << u << " i" << i;
        EXPECT_EQ(grads[size_t(i)], grad_copies) << "grads, u" << u << " i" << i;
        EXPECT_EQ(state[size_t(i)], state_copies) << "state, u" << u << " i" << i;
        if (s >= 1) {
          EXPECT_EQ(norm_sharded[size_t(i)], 1) << "norm, u" << u << " i" << i;
        }
      }
    }

    for (int r = 0; r < W; ++r) {
      const Partition& p = parts[size_t(r)];
      // The collectives the stage issues.
      EXPECT_EQ(p.all_reduces_grads(), kFlags[s].all_reduce);
      EXPECT_EQ(p.reduces_each_micro_step(), kFlags[s].each_micro);
      EXPECT_EQ(p.gathers_params_for_compute(), kFlags[s].gather_compute);
      EXPECT_EQ(p.gathers_params_after_update(), kFlags[s].gather_after);

      // Homes. Parameter offload moves stage 3's shard; optimizer offload moves whole units, all of
      // them, or with ratio < 1 the shortest walk-order prefix holding at least that share.
      int64_t shard_total = 0;
      for (int u = 0; u < U; ++u) shard_total += p.unit(u).state_len;
      // Units offloaded: all (ratio 1), else the shortest walk-order prefix whose state reaches
      // ratio × this rank's state (none for ratio 0).
      int offloaded = 0;
      if (row.offload.optimizer != OffloadDevice::None) {
        if (row.offload.ratio >= 1.0) offloaded = U;
        else
          for (int64_t sum = 0; offloaded < U && double(sum) < row.offload.ratio * double(shard_total); ++offloaded)
            sum += p.unit(offloaded).state_len;
      }
      bool any_staged = false;
      int64_t L_backend = 0, L_host = 0, nvme_valid = 0, param_elems = 0, grad_elems = 0;
      for (int u = 0; u < U; ++u) {
        const UnitPart& up = p.unit(u);
        const ParamHome ph = s == 3 && row.offload.param == OffloadDevice::CPU    ? ParamHome::Host
                             : s == 3 && row.offload.param == OffloadDevice::NVMe ? ParamHome::Nvme
                                                                                  : ParamHome::Backend;
        EXPECT_EQ(int(up.param), int(ph)) << "u" << u;
        EXPECT_FALSE(up.device_update) << "u" << u << ": the CPU backend never runs the device AdamW";
        const StateHome sh = u >= offloaded                                  ? StateHome::Backend
                             : row.offload.optimizer == OffloadDevice::NVMe ? StateHome::Nvme
                                                                            : StateHome::Host;
        EXPECT_EQ(int(up.state), int(sh)) << "u" << u;
        EXPECT_EQ(up.staged(), sh != StateHome::Backend) << "u" << u;
        any_staged = any_staged || sh != StateHome::Backend;
        if (sh == StateHome::Backend) L_backend += up.state_len;
        else if (sh == StateHome::Host) L_host += up.state_len;
        else nvme_valid += up.state_valid;
        param_elems += up.param_len;
        grad_elems += up.grad_len;
      }
      EXPECT_EQ(p.any_staged(), any_staged);
      EXPECT_FALSE(p.any_device_update());
      const bool aliases = row.precision == DType::F32 && row.offload.param == OffloadDevice::None && !any_staged;
      EXPECT_EQ(p.master_aliases_params(), aliases);

      // Totals against the stage's closed form: Σ padded units (stages 0–2 params, 0–1 grads, 0
      // state) or Σ shards = Σ padded / W.
      EXPECT_EQ(param_elems, s == 3 ? psi_padded / W : psi_padded);
      EXPECT_EQ(grad_elems, s >= 2 ? psi_padded / W : psi_padded);
      EXPECT_EQ(p.map().total_padded(), psi_padded);
      EXPECT_EQ(p.map().total_numel(), psi);

      // Footprint at 2- and 4-byte working elements.
      for (size_t wb : {size_t(2), size_t(4)}) {
        const Footprint f = p.footprint(wb);
        const uint64_t pb = uint64_t(param_elems) * wb;
        EXPECT_EQ(f.params, row.offload.param == OffloadDevice::None ? pb : 0u) << "wb" << wb;
        EXPECT_EQ(f.host_params, row.offload.param == OffloadDevice::CPU ? pb : 0u) << "wb" << wb;
        EXPECT_EQ(f.grads, uint64_t(grad_elems) * wb) << "wb" << wb;
        EXPECT_EQ(f.master, aliases ? 0u : uint64_t(L_backend) * 4) << "wb" << wb;
        EXPECT_EQ(f.optimizer, uint64_t(L_backend) * 4 * K) << "wb" << wb;
        EXPECT_EQ(f.host_master, uint64_t(L_host) * 4) << "wb" << wb;
        EXPECT_EQ(f.host_optimizer, uint64_t(L_host) * 4 * K) << "wb" << wb;
        const uint64_t nvme = (row.offload.param == OffloadDevice::NVMe ? pb : 0u) + uint64_t(nvme_valid) * 4 * (K + 1);
        EXPECT_EQ(f.nvme, nvme) << "wb" << wb;
      }

      // Communication per step with one micro-step, in algorithm bytes (nccl-tests' convention, as
      // collectives/communicator.h counts them) over the padded layout: stage 0 all-reduces Ψ;
      // stages 1–2 reduce-scatter Ψ and all-gather Ψ; stage 3 all-gathers Ψ twice (forward,
      // backward) and reduce-scatters Ψ.
      const uint64_t algo_elems[4] = {uint64_t(psi_padded), 2 * uint64_t(psi_padded), 2 * uint64_t(psi_padded),
                                      3 * uint64_t(psi_padded)};
      for (size_t es : {size_t(2), size_t(4)}) {
        const uint64_t got = p.expected_comm_bytes_per_step(es);
        EXPECT_EQ(got, algo_elems[s] * es) << "es" << es;
        // The same volumes as the ZeRO paper counts them (data each rank moves on a ring, up to the
        // common (W−1)/W): a ring all-reduce moves twice its algorithm bytes, reduce-scatter and
        // all-gather once — so 2Ψ for stages 0, 1 and 2, and 3Ψ for stage 3.
        const uint64_t ring_factor = s == 0 ? 2 : 1;
        const uint64_t paper_psi[4] = {2, 2, 2, 3};
        EXPECT_EQ(got * ring_factor, paper_psi[s] * uint64_t(psi_padded) * es) << "es" << es;
      }
    }
    if (::testing::Test::HasFailure()) return;  // keep a failing table readable: the first failing row
  }
}

// A GPU backend (backend_is_host = false): Adam/AdamW left in backend memory run the device update;
// SGD and Lamb step on the host; parameter offload needs every unit's step on the host (a rule of
// zero_rules.h, which the engine checks before it builds a Partition).
TEST(PartitionTable, GpuBackendHomes) {
  struct GpuRow {
    int stage;
    OptimizerType opt;
    OffloadDevice off_opt, off_param;
    double ratio;
    bool throws;
    StateHome home;  // of every unit, when it does not throw (ratio 1)
    bool device;
  };
  const std::vector<GpuRow> rows = {
      {0, OptimizerType::AdamW, OffloadDevice::None, OffloadDevice::None, 1, false, StateHome::Backend, true},
      {1, OptimizerType::AdamL2, OffloadDevice::None, OffloadDevice::None, 1, false, StateHome::Backend, true},
      {2, OptimizerType::SGD, OffloadDevice::None, OffloadDevice::None, 1, false, StateHome::Host, false},
      {2, OptimizerType::Lamb, OffloadDevice::None, OffloadDevice::None, 1, false, StateHome::Host, false},
      {2, OptimizerType::AdamW, OffloadDevice::CPU, OffloadDevice::None, 1, false, StateHome::Host, false},
      {3, OptimizerType::AdamW, OffloadDevice::NVMe, OffloadDevice::None, 1, false, StateHome::Nvme, false},
      {3, OptimizerType::AdamW, OffloadDevice::None, OffloadDevice::CPU, 1, true, StateHome::Backend, true},
      {3, OptimizerType::AdamW, OffloadDevice::CPU, OffloadDevice::CPU, 1, false, StateHome::Host, false},
      {3, OptimizerType::AdamW, OffloadDevice::CPU, OffloadDevice::NVMe, 0.5, true, StateHome::Backend, true},
      {3, OptimizerType::SGD, OffloadDevice::None, OffloadDevice::CPU, 1, false, StateHome::Host, false},
  };
  for (const GpuRow& g : rows) {
    for (int W : {1, 3, 8}) {
      SCOPED_TRACE("stage" + std::to_string(g.stage) + " opt" + optimizer_type_name(g.opt) + " off_opt " +
                   offload_name(g.off_opt) + " off_param " + offload_name(g.off_param) + " W" + std::to_string(W));
      PartitionConfig c;
      c.stage = g.stage;
      c.world_size = W;
      c.rank = W - 1;
      c.optimizer = g.opt;
      c.offload_optimizer = g.off_opt;
      c.offload_param = g.off_param;
      c.offload_ratio = g.ratio;
      c.backend_is_host = false;
      c.precision = DType::BF16;
      // The refusal is the ZeRO rules' (runtime/zero/zero_rules.h), checked before the objects are built.
      ZeroOptionSet zs;
      zs.stage = g.stage;
      zs.precision = DType::BF16;
      zs.optimizer = g.opt;
      zs.offload_optimizer = g.off_opt;
      zs.offload_param = g.off_param;
      zs.offload_ratio = g.ratio;
      const std::vector<ZeroRule> broken = check_zero_options(zs, BackendCaps::cuda());
      const bool refused =
          std::find(broken.begin(), broken.end(), ZeroRule::ParamOffloadNeedsHostOptimizer) != broken.end();
      EXPECT_EQ(refused, g.throws);
      if (g.throws) continue;
      const Partition p(gpt2_units(true), c);
      for (int u = 0; u < p.units(); ++u) {
        EXPECT_EQ(int(p.unit(u).state), int(g.home)) << "u" << u;
        EXPECT_EQ(p.unit(u).device_update, g.device) << "u" << u;
      }
      EXPECT_EQ(p.any_device_update(), g.device);
      EXPECT_EQ(p.any_staged(), g.home != StateHome::Backend);
      EXPECT_FALSE(p.master_aliases_params()) << "a GPU backend's master is never its working params";
    }
  }
}

TEST(PartitionTable, RejectsStagesOutsideZeroToThree) {
  for (int stage : {-1, 4}) {
    PartitionConfig c;
    c.stage = stage;
    EXPECT_THROW(Partition(odd_units(), c), std::invalid_argument) << stage;
  }
}

// The stage traits, as ZeRO's paper states them: P_os from stage 1, P_os+g from stage 2,
// P_os+g+p at stage 3; a sharded state's bytes divide by the world size, others by 1.
TEST(StageTraits, StagesShardOptimizerThenGradsThenParams) {
  const bool expect[4][3] = {{false, false, false}, {true, false, false}, {true, true, false}, {true, true, true}};
  for (int stage = 0; stage < 4; ++stage) {
    const StageTraits t = stage_traits(stage);
    EXPECT_EQ(t.shards_optimizer, expect[stage][0]) << stage;
    EXPECT_EQ(t.shards_grads, expect[stage][1]) << stage;
    EXPECT_EQ(t.shards_params, expect[stage][2]) << stage;
    for (int n : {1, 2, 7}) {
      EXPECT_EQ(t.optimizer_divisor(n), expect[stage][0] ? double(n) : 1.0);
      EXPECT_EQ(t.grad_divisor(n), expect[stage][1] ? double(n) : 1.0);
      EXPECT_EQ(t.param_divisor(n), expect[stage][2] ? double(n) : 1.0);
    }
    // The Partition carries the same traits it was built with.
    PartitionConfig c;
    c.stage = stage;
    c.world_size = 2;
    const Partition part({UnitSpec{"u", 10, {}}}, c);
    EXPECT_EQ(part.traits().shards_params, expect[stage][2]);
    EXPECT_EQ(part.all_reduces_grads(), !expect[stage][0]);
    EXPECT_EQ(part.reduces_each_micro_step(), expect[stage][1]);
    EXPECT_EQ(part.gathers_params_for_compute(), expect[stage][2]);
  }
}

}  // namespace
}  // namespace zt::test
