// GradReducer on its own, driven the way the engine's backward walk drives it (start_step, then per
// micro-step start_micro_step, grad_buffer / unit_done for units U-1..0, then finish) through a
// RecordingCommunicator, as a table: stages 0–3 × grad_accum 1 and 2 × overlap_comm off and on ×
// (world, rank) (1,0) (2,1) (3,0) (3,2) (8,5) × two layouts (sizes no world divides at alignment 1,
// with bucket sizes 1, 5, 48 and larger than everything; the tiny GPT-2 with its tied head writing
// into the embedding's buffer, with 7, 1000 and larger than everything), two steps each.
// Checked per call against values computed here from the layout: the op (all-reduce for stage 0,
// reduce-scatter otherwise), the entry point (the async segment form), dtype and reduction, the
// element count (exactly the bucket size, the last bucket the rest), every segment's buffer, offset,
// length and owner, when it is issued (during the unit_done that completes its last unit; stages
// 0–1 only in the boundary micro-step), when it is waited (where issued without overlap; with
// overlap at the next issue for stages 2–3, at finish for stages 0–1), one call per bucket per
// reduction, and that the reduced sums land where the Partition says.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "runtime/zero/grad_reducer.h"
#include "runtime/zero/memory_ledger.h"
#include "runtime/zero/partition.h"
#include "runtime/zero/unit_buffers.h"
#include "runtime/zero/zero_context.h"
#include "tests/zero/recording_communicator.h"
#include "tests/zero/zero_test_layouts.h"

namespace zt::test {
namespace {

struct Row {
  NamedLayout layout;
  int64_t alignment;
  bool tied_head;  // the last unit's backward also adds into unit 0's buffer (GPT-2's tied wte)
  int stage, world, rank, accum;
  bool overlap;
  int64_t bucket;
  std::string str() const {
    std::ostringstream s;
    s << layout.name << " align" << alignment << " stage" << stage << " W" << world << " rank" << rank << " accum"
      << accum << (overlap ? " overlap" : " no-overlap") << " bucket" << bucket;
    return s.str();
  }
};

std::vector<Row> table() {
  struct L {
    NamedLayout layout;
    int64_t alignment;
    bool tied;
    std::vector<int64_t> buckets;
  };
  const std::vector<L> layouts = {
      {{"odd", odd_units()}, 1, false, {1, 5, 48, int64_t(1) << 30}},
      {{"gpt2_tiny_tied", gpt2_units(true)}, 16, true, {7, 1000, int64_t(1) << 30}},
  };
  const std::vector<std::pair<int, int>> ranks = {{1, 0}, {2, 1}, {3, 0}, {3, 2}, {8, 5}};
  std::vector<Row> rows;
  for (const L& l : layouts)
    for (int stage = 0; stage <= 3; ++stage)
      for (int accum : {1, 2})
        for (bool overlap : {false, true})
          for (auto [W, r] : ranks)
            for (int64_t N : l.buckets) rows.push_back({l.layout, l.alignment, l.tied, stage, W, r, accum, overlap, N});
  return rows;
}

// Gradient values backward adds: small integers, so every sum below is exact in fp32.
float grad_value(int step, int m, int u, int64_t i) { return float(1 + (i * 7 + u * 13 + m * 5 + step * 3) % 11); }
float tied_value(int step, int m, int64_t i) { return float(1 + (i * 3 + m + step) % 5); }

// One bucket of the backward stream, from the layout: its pieces and the position whose unit_done
// completes it.
struct RefPiece {
  int unit;
  int64_t begin, n;
};
struct RefBucket {
  std::vector<RefPiece> pieces;
  int64_t count = 0;
  int done_pos = 0;
};
std::vector<RefBucket> reference_buckets(const std::vector<int64_t>& padded, int64_t N) {
  const int U = int(padded.size());
  std::vector<RefBucket> out;
  int64_t at = 0;
  for (int pos = 0; pos < U; ++pos) {
    const int u = U - 1 - pos;  // backward order
    for (int64_t i = 0; i < padded[size_t(u)]; ++i, ++at) {
      const size_t k = size_t(at / N);
      if (out.size() <= k) out.resize(k + 1);
      RefBucket& b = out[k];
      if (b.pieces.empty() || b.pieces.back().unit != u) b.pieces.push_back({u, i, 0});
      ++b.pieces.back().n;
      ++b.count;
      b.done_pos = pos;
    }
  }
  return out;
}

void run_row(const Row& row) {
  const auto& units = row.layout.units;
  const int U = int(units.size()), W = row.world, me = row.rank, s = row.stage, A = row.accum;
  std::vector<int64_t> padded, shard, numel;
  int64_t P = 0;
  for (const UnitSpec& u : units) {
    padded.push_back(padded_len(u.numel, W, row.alignment));
    shard.push_back(padded.back() / W);
    numel.push_back(u.numel);
    P += padded.back();
  }
  const std::vector<RefBucket> ref = reference_buckets(padded, row.bucket);
  const size_t nb = ref.size();
  const int reductions = s >= 2 ? A : 1;

  auto backend = make_cpu_backend();
  RecordingCommunicator comm(me, W);
  MemoryLedger ledger(*backend);
  PartitionConfig pc;
  pc.stage = s;
  pc.world_size = W;
  pc.rank = me;
  pc.alignment = row.alignment;
  const Partition part(units, pc);
  ZeroContext z{*backend, comm, ledger, part, DType::F32, DType::F32, DType::F32, nullptr, {}};
  UnitBufferPool pool(ledger, *backend, z.element_bytes());
  GradReducer red(z, pool, {row.bucket, row.overlap});

  // The reducer's own cut is the reference's.
  ASSERT_EQ(red.buckets().size(), nb);
  for (size_t k = 0; k < nb; ++k) {
    ASSERT_EQ(red.buckets()[k].pieces.size(), ref[k].pieces.size()) << "bucket " << k;
    for (size_t j = 0; j < ref[k].pieces.size(); ++j) {
      EXPECT_EQ(red.buckets()[k].pieces[j].unit, ref[k].pieces[j].unit);
      EXPECT_EQ(red.buckets()[k].pieces[j].begin, ref[k].pieces[j].begin);
      EXPECT_EQ(red.buckets()[k].pieces[j].n, ref[k].pieces[j].n);
    }
  }
  // The accumulated gradients it allocates: full units for stages 0–1, shards for 2–3.
  EXPECT_EQ(ledger.current()[MemCategory::Grads], uint64_t(s >= 2 ? P / W : P) * 4);

  for (int step = 0; step < 2; ++step) {
    const size_t first_call = comm.calls.size();
    comm.now = {step, -1, "start_step", -1};
    red.start_step();
    std::vector<std::vector<float*>> full(size_t(A), std::vector<float*>(size_t(U), nullptr));
    auto buffer = [&](int m, int u) {
      float* g = static_cast<float*>(red.grad_buffer(u));
      float*& seen = full[size_t(m)][size_t(u)];
      if (!seen) {
        seen = g;
        for (int64_t i = 0; i < padded[size_t(u)]; ++i)
          if (g[i] != 0.f) {
            ADD_FAILURE() << "grad_buffer(" << u << ") is not zeroed at element " << i << " (micro " << m << ")";
            break;
          }
      } else {
        EXPECT_EQ(g, seen) << "grad_buffer(" << u << ") moved within micro-step " << m;
      }
      return g;
    };
    for (int m = 0; m < A; ++m) {
      comm.now = {step, m, "start_micro_step", -1};
      red.start_micro_step(m == A - 1);
      for (int u = U - 1; u >= 0; --u) {
        comm.now = {step, m, "backward", u};
        float* g = buffer(m, u);
        for (int64_t i = 0; i < padded[size_t(u)]; ++i) g[i] += grad_value(step, m, u, i);
        if (row.tied_head && u == U - 1) {
          float* e = buffer(m, 0);
          for (int64_t i = 0; i < numel[0]; ++i) e[i] += tied_value(step, m, i);
        }
        comm.now = {step, m, "unit_done", u};
        red.unit_done(u);
      }
    }
    comm.now = {step, A - 1, "finish", -1};
    red.finish();
    EXPECT_EQ(comm.in_flight(), 0u) << "finish left collectives in flight";

    // --- the calls of this step -----------------------------------------------------------------
    const size_t got = comm.calls.size() - first_call;
    ASSERT_EQ(got, nb * size_t(reductions)) << "one call per bucket per reduction";
    for (size_t c = 0; c < got; ++c) {
      const RecordedCall& call = comm.calls[first_call + c];
      const int m = s >= 2 ? int(c / nb) : A - 1;
      const size_t k = c % nb;
      SCOPED_TRACE("step " + std::to_string(step) + " call " + std::to_string(c) + " (micro " + std::to_string(m) +
                   ", bucket " + std::to_string(k) + ")");
      EXPECT_EQ(int(call.op), int(s == 0 ? CommOp::AllReduce : CommOp::ReduceScatter));
      EXPECT_EQ(call.entry, s == 0 ? "all_reduce_segments_async" : "reduce_scatter_segments_async");
      EXPECT_EQ(int(call.dtype), int(DType::F32));
      EXPECT_EQ(int(call.reduce), int(ReduceOp::Sum));
      EXPECT_EQ(int64_t(call.count), k + 1 < nb ? row.bucket : P - row.bucket * int64_t(nb - 1));
      EXPECT_EQ(int64_t(call.count), ref[k].count);
      EXPECT_EQ(call.waits, 1);
      // Segments: each piece of the bucket in the buffer the stage reduces (the accumulated full
      // gradient for 0–1, this micro-step's full buffer for 2–3), cut at shard boundaries with the
      // owner of each part (not cut, and owner ignored, for stage 0's all-reduce).
      std::vector<Segment> want;
      for (const RefPiece& piece : ref[k].pieces) {
        char* base = s <= 1 ? static_cast<char*>(red.grads(piece.unit))
                            : reinterpret_cast<char*>(full[size_t(m)][size_t(piece.unit)]);
        if (s == 0) {
          want.push_back({base + piece.begin * 4, size_t(piece.n), 0});
          continue;
        }
        for (int64_t e = piece.begin; e < piece.begin + piece.n; ++e) {
          const int owner = int(e / shard[size_t(piece.unit)]);
          if (e == piece.begin || want.back().owner != owner) want.push_back({base + e * 4, 0, owner});
          ++want.back().count;
        }
      }
      ASSERT_EQ(call.segments.size(), want.size());
      for (size_t j = 0; j < want.size(); ++j) {
        EXPECT_EQ(call.segments[j].data, want[j].data) << "segment " << j;
        EXPECT_EQ(call.segments[j].count, want[j].count) << "segment " << j;
        if (s != 0) {
          EXPECT_EQ(call.segments[j].owner, want[j].owner) << "segment " << j;
        }
      }
      // When: issued by the unit_done that completes the bucket's last unit, in micro-step m.
      const TestClock issued{step, m, "unit_done", U - 1 - ref[k].done_pos};
      EXPECT_EQ(call.issued, issued) << "issued at " << call.issued.str() << ", expected " << issued.str();
      // Waited: where issued without overlap; with overlap, stages 2–3 keep one bucket in flight (it
      // is waited when the next is issued, or at the next micro-step's start or finish), stages 0–1
      // keep all of them until finish.
      TestClock waited = issued;
      if (row.overlap) {
        if (s <= 1) waited = {step, A - 1, "finish", -1};
        else if (k + 1 < nb) waited = {step, m, "unit_done", U - 1 - ref[k + 1].done_pos};
        else if (m + 1 < A) waited = {step, m + 1, "start_micro_step", -1};
        else waited = {step, A - 1, "finish", -1};
      }
      EXPECT_EQ(call.completed, waited) << "waited at " << call.completed.str() << ", expected " << waited.str();
      if (::testing::Test::HasFailure()) return;
    }
    // Algorithm bytes this step: the gradient share of Partition's per-step volume (all of it for
    // stage 0, the reduce-scatter's Ψ of 2Ψ for 1–2 and of 3Ψ for 3), once per reduction.
    uint64_t bytes = 0;
    for (size_t c = first_call; c < comm.calls.size(); ++c) bytes += comm.calls[c].count * 4;
    EXPECT_EQ(bytes, uint64_t(P) * 4 * uint64_t(reductions));
    const uint64_t share[4] = {1, 2, 2, 3};
    EXPECT_EQ(bytes, part.expected_comm_bytes_per_step(4) / share[s] * uint64_t(reductions));

    // --- where the sums landed ------------------------------------------------------------------
    for (int u = 0; u < U; ++u) {
      const UnitPart& up = part.unit(u);
      const int64_t rb = int64_t(me) * shard[size_t(u)];
      auto G = [&](int64_t e) {
        float g = 0;
        for (int m = 0; m < A; ++m) {
          g += grad_value(step, m, u, e);
          if (row.tied_head && u == 0 && e < numel[0]) g += tied_value(step, m, e);
        }
        return g;
      };
      // This rank's reduced sum, where the Partition says it is: state element j at state_in_grad + j
      // of the accumulated buffer, W × the gradient at unit element state_begin + j (every rank
      // added the same values).
      const float* red_u = static_cast<const float*>(red.grads(u)) + up.state_in_grad;
      for (int64_t j = 0; j < up.state_len; ++j) {
        if (red_u[j] != float(W) * G(up.state_begin + j)) {
          ADD_FAILURE() << "reduced sum of unit " << u << ", state element " << j << " = " << red_u[j] << ", expected " << float(W) * G(up.state_begin + j);
          break;
        }
      }
      // The whole accumulated buffer: stage 0 all of it summed; stage 1 the owned shard summed and
      // the rest this rank's own values; stages 2–3 hold only their shard.
      const float* acc = static_cast<const float*>(red.grads(u));
      const int64_t base = s >= 2 ? rb : 0;
      EXPECT_EQ(up.grad_len, s >= 2 ? shard[size_t(u)] : padded[size_t(u)]);
      for (int64_t j = 0; j < up.grad_len; ++j) {
        const int64_t e = base + j;
        const bool summed = s == 0 || (e >= rb && e < rb + shard[size_t(u)]);
        const float want = summed ? float(W) * G(e) : G(e);
        if (acc[j] != want) {
          ADD_FAILURE() << "grads(" << u << ")[" << j << "] (unit element " << e << ") = " << acc[j] << ", expected " << want;
          break;
        }
      }
    }
    if (::testing::Test::HasFailure()) return;
  }
  for (const std::string& e : comm.errors) ADD_FAILURE() << e;
}

TEST(GradReducerTable, CollectivesTimingAndResultsPerStage) {
  const std::vector<Row> rows = table();
  ASSERT_EQ(rows.size(), size_t(4 * 2 * 2 * 5 * (4 + 3)));
  for (const Row& row : rows) {
    SCOPED_TRACE(row.str());
    run_row(row);
    if (::testing::Test::HasFailure()) return;  // one failing row is enough to read
  }
}

// finish() refuses a micro-step in which a unit never reported done (its buckets were not issued).
TEST(GradReducerTable, FinishRefusesBucketsNeverIssued) {
  auto backend = make_cpu_backend();
  for (int stage = 0; stage <= 3; ++stage) {
    SCOPED_TRACE("stage" + std::to_string(stage));
    RecordingCommunicator comm(0, 2);
    MemoryLedger ledger(*backend);
    PartitionConfig pc;
    pc.stage = stage;
    pc.world_size = 2;
    pc.alignment = 1;
    const Partition part(odd_units(), pc);
    ZeroContext z{*backend, comm, ledger, part, DType::F32, DType::F32, DType::F32, nullptr, {}};
    UnitBufferPool pool(ledger, *backend, z.element_bytes());
    GradReducer red(z, pool, {4, false});
    red.start_step();
    red.start_micro_step(true);
    for (int u = part.units() - 1; u >= 1; --u) {
      red.grad_buffer(u);
      red.unit_done(u);
    }
    EXPECT_THROW(red.finish(), std::logic_error);  // unit 0 never done
  }
}

}  // namespace
}  // namespace zt::test
