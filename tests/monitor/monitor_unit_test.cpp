// The monitor pieces on their own: CRC32C and the TFRecord framing of our event files (decoded
// back through the protobuf schema), the CSV layout, folder errors, the comms logger's bandwidths
// and tables, the per-op FLOPs formulas, the flops profiler's grouping of op records by scope and the
// hidden-communication share of a trace.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kernels/op_flops.h"
#include "runtime/monitor/comm_overlap.h"
#include "runtime/monitor/comms_logger.h"
#include "runtime/monitor/flops_profiler.h"
#include "runtime/monitor/monitor.h"
#include "runtime/monitor/tb_event_writer.h"
#include "tb_event.pb.h"

namespace zt {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("zt_monitor_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Crc32c, KnownVectors) {
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);  // the CRC-32C check value
  EXPECT_EQ(crc32c("", 0), 0u);
  const std::string zeros(32, '\0');
  EXPECT_EQ(crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);  // RFC 3720 B.4: 32 bytes of zeros
  const uint32_t c = crc32c("123456789", 9);
  EXPECT_EQ(masked_crc32c("123456789", 9), ((c >> 15) | (c << 17)) + 0xa282ead8u);
}

// Reads TFRecord framing back by hand, checking both CRCs of every record.
std::vector<tb::Event> read_records(const std::string& bytes) {
  std::vector<tb::Event> out;
  size_t pos = 0;
  while (pos < bytes.size()) {
    EXPECT_GE(bytes.size() - pos, 16u);
    uint64_t len = 0;
    std::memcpy(&len, bytes.data() + pos, 8);
    uint32_t len_crc = 0, data_crc = 0;
    std::memcpy(&len_crc, bytes.data() + pos + 8, 4);
    EXPECT_EQ(len_crc, masked_crc32c(bytes.data() + pos, 8));
    const std::string payload = bytes.substr(pos + 12, len);
    std::memcpy(&data_crc, bytes.data() + pos + 12 + len, 4);
    EXPECT_EQ(data_crc, masked_crc32c(payload.data(), payload.size()));
    tb::Event e;
    EXPECT_TRUE(e.ParseFromString(payload));
    out.push_back(e);
    pos += 12 + len + 4;
  }
  return out;
}

TEST(EventFile, RecordsDecodeWithVersionFirstAndEveryScalar) {
  const fs::path dir = fresh_dir("tb") / "job";
  std::string path;
  {
    EventFileWriter w(dir.string());
    path = w.path();
    w.add_scalar("Train/Samples/train_loss", 2.5f, 8, 100.0);
    w.add_scalar("Train/Samples/lr", 1e-3f, 8, 100.5);
    w.add_scalar("Train/Samples/train_loss", 2.25f, 16, 101.0);
    w.flush();
  }
  EXPECT_NE(fs::path(path).filename().string().find("events.out.tfevents."), std::string::npos);
  const auto ev = read_records(slurp(path));
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(ev[0].file_version(), "brain.Event:2");
  EXPECT_EQ(ev[1].step(), 8);
  ASSERT_EQ(ev[1].summary().value_size(), 1);
  EXPECT_EQ(ev[1].summary().value(0).tag(), "Train/Samples/train_loss");
  EXPECT_FLOAT_EQ(ev[1].summary().value(0).simple_value(), 2.5f);
  EXPECT_DOUBLE_EQ(ev[2].wall_time(), 100.5);
  EXPECT_FLOAT_EQ(ev[3].summary().value(0).simple_value(), 2.25f);
  EXPECT_EQ(ev[3].step(), 16);
  fs::remove_all(dir.parent_path());
}

TEST(CsvMonitor, DeepSpeedLayoutOneFilePerMetricAppendedWithOneHeader) {
  const fs::path dir = fresh_dir("csv");
  {
    auto m = make_csv_monitor(dir.string());
    m->write({{"Train/Samples/train_loss", 2.5, 8}, {"Train/Samples/lr", 0.001, 8}});
    m->write({{"Train/Samples/train_loss", 0.1, 16}});
  }
  EXPECT_EQ(slurp(dir / "Train_Samples_train_loss.csv"), "step,train_loss\n8,2.5\n16,0.1\n");
  EXPECT_EQ(slurp(dir / "Train_Samples_lr.csv"), "step,lr\n8,0.001\n");
  {  // a second run appends its rows under the existing header
    auto m = make_csv_monitor(dir.string());
    m->write({{"Train/Samples/lr", 0.002, 24}});
  }
  EXPECT_EQ(slurp(dir / "Train_Samples_lr.csv"), "step,lr\n8,0.001\n24,0.002\n");
  EXPECT_FALSE(fs::exists(dir / ".zerotrain_write_probe"));
  fs::remove_all(dir);
}

TEST(Monitors, FolderUnderAFileIsAnErrorNamingTheKey) {
  const fs::path dir = fresh_dir("bad");
  fs::create_directories(dir);
  std::ofstream(dir / "file") << "x";
  Config c;
  c.csv_monitor.enabled = true;
  c.csv_monitor.output_path = (dir / "file").string();
  c.tensorboard.enabled = true;
  c.tensorboard.output_path = (dir / "file").string();
  Diagnostics d;
  const Monitors m = Monitors::from_config(c, true, d);
  ASSERT_EQ(d.error_count(), 2u);
  EXPECT_EQ(d.all()[0].path, "csv_monitor.output_path");
  EXPECT_EQ(d.all()[1].path, "tensorboard.output_path");
  EXPECT_NE(d.all()[0].message.find("cannot create the folder"), std::string::npos) << d.format();
  EXPECT_TRUE(m.empty());
  Diagnostics none;
  EXPECT_TRUE(Monitors::from_config(c, /*rank0=*/false, none).empty());
  EXPECT_FALSE(none.has_errors());
  fs::remove_all(dir);
}

TEST(CommsLogger, NcclTestsBandwidths) {
  // 1 GB in 1 s among 4 ranks.
  EXPECT_DOUBLE_EQ(comm_algbw(1000000000, 1.0), 1e9);
  EXPECT_DOUBLE_EQ(comm_busbw(CommOp::AllReduce, 1000000000, 1.0, 4), 1.5e9);
  EXPECT_DOUBLE_EQ(comm_busbw(CommOp::ReduceScatter, 1000000000, 1.0, 4), 0.75e9);
  EXPECT_DOUBLE_EQ(comm_busbw(CommOp::AllGather, 1000000000, 2.0, 4), 0.375e9);
  EXPECT_DOUBLE_EQ(comm_busbw(CommOp::Broadcast, 1000000000, 1.0, 4), 1e9);
  EXPECT_EQ(human_bytes(2048), "2 KB");
  EXPECT_EQ(human_bytes(711851212), "678.87 MB");
}

CommStats stats_with(std::initializer_list<std::tuple<CommOp, uint64_t, uint64_t, double>> rows) {
  CommStats s;
  for (const auto& [op, bytes, calls, secs] : rows) {
    s.by_size[{op, bytes}] = {calls, secs};
    s.op[int(op)].calls += calls;
    s.op[int(op)].bytes += calls * bytes;
    s.op[int(op)].busy_seconds += secs;
  }
  return s;
}

TEST(CommsLogger, RowsAreTheDifferenceAndProfOpsFilters) {
  const CommStats before = stats_with({{CommOp::AllGather, 4096, 2, 0.002}});
  const CommStats after = stats_with({{CommOp::AllGather, 4096, 5, 0.005}, {CommOp::ReduceScatter, 8192, 3, 0.03}});
  CommsLoggerConfig c;
  c.enabled = true;
  CommsLogger all(c, 2, before);
  const auto rows = all.totals(after);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].op, CommOp::ReduceScatter);  // the op enum's order
  EXPECT_EQ(rows[0].calls, 3u);
  EXPECT_EQ(rows[1].op, CommOp::AllGather);
  EXPECT_EQ(rows[1].calls, 3u);
  EXPECT_NEAR(rows[1].seconds, 0.003, 1e-12);
  const std::string table = all.summary(after);
  EXPECT_NE(table.find("Comm. Op            Message Size"), std::string::npos) << table;
  EXPECT_NE(table.find("reduce_scatter\n"), std::string::npos) << table;
  EXPECT_NE(table.find("total 24 KB"), std::string::npos) << table;

  c.prof_all = false;
  c.prof_ops = std::vector<std::string>{"all_gather_into_tensor"};
  CommsLogger some(c, 2, before);
  const auto only = some.totals(after);
  ASSERT_EQ(only.size(), 1u);
  EXPECT_EQ(only[0].op, CommOp::AllGather);
  EXPECT_NE(some.step_lines(7, before, after).find("comm op: all_gather | count: 3"), std::string::npos);
}

TEST(CommsLogger, UnknownProfOpIsAnError) {
  CommsLoggerConfig c;
  c.enabled = true;
  c.prof_ops = std::vector<std::string>{"all_reduce", "allgather"};
  Diagnostics d;
  CommsLogger::check(c, d);
  ASSERT_EQ(d.error_count(), 1u);
  EXPECT_EQ(d.all()[0].path, "comms_logger.prof_ops[1]");
  EXPECT_EQ(d.all()[0].value, "\"allgather\"");
}

TEST(OpFlops, Gpt2StepIsSixPsiPlusBiasesPlusCausalAttention) {
  const int64_t L = 4, C = 128, V = 256, T = 64, seqs = 8;
  const Gpt2Flops f = gpt2_training_flops(L, C, V, T, seqs, false);
  const double tokens = double(T * seqs);
  const double psi_w = 12.0 * L * C * C + double(V) * C, psi_b = 9.0 * L * C;
  EXPECT_DOUBLE_EQ(f.gemm_forward + f.gemm_backward, (6 * psi_w + 2 * psi_b) * tokens);
  EXPECT_DOUBLE_EQ(f.attention_forward + f.attention_backward, 12.0 * C * L * (T * (T + 1) / 2.0) * seqs);
  EXPECT_EQ(f.recompute, 0.0);
  EXPECT_DOUBLE_EQ(matmul_backward_flops(10, 3, 5, true, true, true), 2 * 2.0 * 10 * 3 * 5 + 10 * 5);
  EXPECT_DOUBLE_EQ(matmul_backward_flops(10, 3, 5, false, true, false), 2.0 * 10 * 3 * 5);
}

// Records made on the CPU backend inside the scopes of a two-micro-step walk over three units.
struct ScopedWalk {
  std::unique_ptr<Backend> backend = make_cpu_backend();
  std::vector<UnitLayout> units{{UnitKind::Embedding, 0, "embedding", {}, 10},
                                {UnitKind::Block, 1, "block0", {}, 20},
                                {UnitKind::Head, 2, "head", {}, 30}};
  OpRecorder rec;
  void* buf = backend->alloc(64 * sizeof(float));
  explicit ScopedWalk(bool skip_head_backward) {
    backend->zero(buf, 64 * sizeof(float));
    backend->attach_op_recorder(&rec);
    for (int micro = 0; micro < 2; ++micro) {
      for (int u = 0; u < 3; ++u) {
        const OpScope scope(*backend, u, OpPass::Forward);
        backend->gelu_forward(buf, buf, 8);
      }
      for (int u = 2; u >= 0; --u) {
        if (u == 2 && skip_head_backward) continue;
        const OpScope scope(*backend, u, OpPass::Backward);
        if (u == 1) backend->gelu_forward(buf, buf, 4);  // recomputed forward
        backend->gelu_backward(buf, buf, buf, 8);
      }
      backend->accumulate(buf, buf, 16);  // the engine's own op
    }
    backend->attach_op_recorder(nullptr);
  }
  ~ScopedWalk() { backend->free(buf); }
};

TEST(FlopsAttribution, OpsGoToTheUnitAndPassOfTheirScope) {
  const ScopedWalk w(false);
  const FlopsProfile p = attribute_ops(w.rec, w.units, 2);
  ASSERT_TRUE(p.attributed) << p.note;
  ASSERT_EQ(p.units.size(), 3u);
  EXPECT_EQ(p.units[1].name, "block0");
  EXPECT_EQ(p.units[1].params, 20);
  for (const UnitProfile& u : p.units) {
    ASSERT_EQ(u.forward.size(), 1u) << u.name;
    EXPECT_EQ(u.forward[0].calls, 2) << u.name;  // one per micro-step, merged
    EXPECT_DOUBLE_EQ(u.forward_flops, 2 * 8.0) << u.name;
    EXPECT_DOUBLE_EQ(u.backward_flops, 2 * 2 * 8.0) << u.name;
  }
  ASSERT_EQ(p.units[1].backward.size(), 2u);
  EXPECT_TRUE(p.units[1].backward[0].recompute);
  EXPECT_FALSE(p.units[1].backward[1].recompute);
  EXPECT_DOUBLE_EQ(p.units[1].recompute_flops, 2 * 4.0);
  EXPECT_DOUBLE_EQ(p.recompute_flops, 2 * 4.0);
  ASSERT_EQ(p.outside.size(), 1u);
  EXPECT_EQ(p.outside[0].kind, OpKind::Accumulate);
  EXPECT_EQ(p.outside[0].calls, 2);
  EXPECT_DOUBLE_EQ(p.forward_flops, 3 * 2 * 8.0);
}

TEST(FlopsAttribution, AMissingScopeGivesPerOpTotalsAndSaysWhich) {
  const ScopedWalk w(true);
  const FlopsProfile p = attribute_ops(w.rec, w.units, 2);
  EXPECT_FALSE(p.attributed);
  EXPECT_NE(p.note.find("unit head's backward scope was opened 0 time(s)"), std::string::npos) << p.note;
  EXPECT_TRUE(p.units.empty());
  double by_kind = 0;
  for (const auto& o : p.by_kind) by_kind += o.flops;
  EXPECT_DOUBLE_EQ(by_kind, 3 * 2 * 8.0 + 2 * 4.0 + 2 * 2 * 16.0 + 2 * 16.0);
}

TEST(CommOverlap, HiddenShareFromWaitSpansOfTheChosenSteps) {
  Trace t;
  const auto t0 = Trace::Clock::now();
  const auto at = [&](double ms) { return t0 + std::chrono::microseconds(int64_t(ms * 1000)); };
  t.span("forward embedding", TraceTrack::Compute, at(0), at(10));          // 0: step 1
  t.span("wait all_gather block0", TraceTrack::Wait, at(10), at(14));       // 1: step 1 (excluded)
  t.span("backward block0", TraceTrack::Compute, at(20), at(30));           // 2: step 2
  t.span("reduce_scatter block0", TraceTrack::Comm, at(20), at(32));        // 3: step 2
  t.span("wait reduce_scatter block0", TraceTrack::Wait, at(30), at(32));   // 4: step 2
  t.span("wait all_gather (updated params)", TraceTrack::Wait, at(40), at(41));  // 5: step 3
  const OverlapShare o = overlap_share(t, {{2, 5}, {5, 6}}, 0.012);
  EXPECT_NEAR(o.exposed_s, 0.003, 1e-9);
  EXPECT_NEAR(o.hidden(), 0.75, 1e-6);
  EXPECT_EQ(overlap_share(t, {}, 0.0).hidden(), 0.0);
  EXPECT_EQ(overlap_share(t, {{0, 6}}, 0.001).hidden(), 0.0);  // waited longer than busy: nothing hidden
}

}  // namespace
}  // namespace zt
