// The checkpoint switches a user sets: O_DIRECT loads (--load-direct), the writer's nice level
// (--save-writer-nice) and its pacing to a share of one core (--save-writer-cpu-percent), each
// shown to take effect through what the load and the writer account for themselves (bytes read
// O_DIRECT, the nice level read back, the pacer's sleeps and CPU seconds), and bad values refused
// naming the flag, the value and the fix.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <limits>

#include "runtime/checkpoint/checkpoint_manager.h"
#include "runtime/checkpoint/writer_pacer.h"
#include "tests/checkpoint/ckpt_test_util.h"
#include "tests/checkpoint/thread_comm.h"

namespace zt::ckpt {
namespace {

using test::FakeShardedState;
using test::TempDir;
using test::takes_direct;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

RunFacts facts(const ModelConfig& m) {  // the run test::save_fake records
  RunFacts f;
  f.model = m;
  f.seed = 7;
  f.global_batch = 8;
  return f;
}

std::string read_all(std::FILE* f) {
  std::string s;
  std::rewind(f);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
  return s;
}

// --load-direct: the run's load reads O_DIRECT and says so; without it, nothing goes O_DIRECT.
TEST(CheckpointSwitches, LoadDirectReadsODirectAndTheReportSaysSo) {
  TempDir dir;
  const auto m = test::small_model();
  ASSERT_TRUE(test::save_fake(dir.path(), m, 2, 1, 4).ok);
  for (bool direct : {false, true}) {
    SCOPED_TRACE(direct ? "--load-direct" : "page cache");
    test::run_ranks(2, [&](int rank, Communicator& comm) {
      FakeShardedState st(m, 2, rank, 1);
      CheckpointSettings s;
      s.load_dir = dir.path();
      s.direct_reads = direct;
      std::FILE* say = std::tmpfile();
      ASSERT_NE(say, nullptr);
      {
        CheckpointManager mgr(st, comm, nullptr, facts(m), s, say);
        EXPECT_EQ(mgr.start(), 4);
        EXPECT_EQ(st.mismatches(4, st.arrays()), 0);
        ASSERT_TRUE(mgr.loaded());
        const auto& io = mgr.loaded()->io;
        const std::string said = read_all(say);
        if (direct && takes_direct(dir.path())) {
          EXPECT_GT(io.direct_bytes, 0);
          EXPECT_TRUE(contains(said, "O_DIRECT")) << said;
        } else {
          EXPECT_EQ(io.direct_bytes, 0);
          EXPECT_FALSE(contains(said, "O_DIRECT")) << said;
        }
      }
      std::fclose(say);
    });
  }
}

// The pacer alone: at 2% of a core over 1 MiB of hashing it must sleep, and the CPU seconds it
// measured stay under the share of the wall seconds it measured (its own account, no wall-clock
// expectation); at 100% it never sleeps.
TEST(CheckpointSwitches, PacerHoldsItsThreadsCpuUnderTheShare) {
  std::vector<uint64_t> data(size_t(1) << 17, 0x9e3779b97f4a7c15ull);  // 1 MiB
  for (double share : {0.02, 0.3, 1.0}) {
    SCOPED_TRACE("share " + std::to_string(share));
    WriterPacer p(share);
    p.start();
    uint64_t x = 0;
    const size_t block = 4096 / sizeof(uint64_t);
    for (size_t b = 0; b < data.size(); b += block) {
      for (size_t i = b; i < b + block; ++i) x = (x ^ data[i]) * 0x100000001b3ull;
      p.after(int64_t(block * sizeof(uint64_t)));
    }
    p.finish();
    const PaceAccount& a = p.account();
    EXPECT_NE(x, 0u);
    EXPECT_EQ(a.bytes, int64_t(data.size() * sizeof(uint64_t)));
    EXPECT_EQ(a.checks, int64_t(data.size() / block));
    if (share < 1) {
      EXPECT_GE(a.sleeps, 1);
      EXPECT_GT(a.slept_s, 0);
      EXPECT_GT(a.cpu_s, 0);
      EXPECT_LE(a.cpu_s, share * a.wall_s * 1.001 + 1e-4) << "cpu " << a.cpu_s << " s, wall " << a.wall_s << " s";
    } else {
      EXPECT_EQ(a.sleeps, 0);
      EXPECT_EQ(a.slept_s, 0);
    }
  }
}

// --save-writer-cpu-percent and --save-writer-nice reach the writer thread of a run's saves.
TEST(CheckpointSwitches, WriterPacingAndNiceReachTheSaves) {
  TempDir dir;
  const auto m = test::kill_driver_model();
  errno = 0;
  const int own = ::getpriority(PRIO_PROCESS, 0);
  for (double pct : {100.0, 2.0}) {
    SCOPED_TRACE("cpu percent " + std::to_string(pct));
    const int nice = std::max(own, 7);
    test::run_ranks(1, [&](int rank, Communicator& comm) {
      FakeShardedState st(m, 1, rank, 1);
      CheckpointSettings s;
      s.save_dir = dir.path();
      s.writer_cpu_percent = pct;
      s.writer_nice = nice;
      CheckpointManager mgr(st, comm, nullptr, facts(m), s, nullptr);
      EXPECT_EQ(mgr.start(), 0);
      st.fill(1);
      mgr.at_end(1);
      ASSERT_EQ(mgr.saves().size(), 1u);
      const SaveResult& r = mgr.saves()[0];
      ASSERT_TRUE(r.ok) << r.message;
      EXPECT_EQ(r.writer_nice, nice);
      EXPECT_GT(r.pace.bytes, 0);
      if (pct < 100) {
        EXPECT_GE(r.pace.sleeps, 1);
        EXPECT_LE(r.pace.cpu_s, pct / 100 * r.pace.wall_s * 1.001 + 1e-4)
            << "cpu " << r.pace.cpu_s << " s, wall " << r.pace.wall_s << " s";
      } else {
        EXPECT_EQ(r.pace.sleeps, 0);
      }
    });
  }
  EXPECT_EQ(test::load_fake([&] { LoadOptions o; o.path = dir.path(); return o; }(), m, 1, 1, 1).mismatches, 0)
      << "the paced save holds the same state";
}

// Bad values: an error naming the flag and the value, with the fix; the writer itself refuses them too.
TEST(CheckpointSwitches, BadValuesAreRefusedNamingTheFlag) {
  struct Case {
    int nice;
    double pct;
    const char* flag;
    const char* value;
  };
  const Case cases[] = {{-1, 100, "--save-writer-nice", "-1"},
                        {20, 100, "--save-writer-nice", "20"},
                        {19, 0, "--save-writer-cpu-percent", "0"},
                        {19, -5, "--save-writer-cpu-percent", "-5"},
                        {19, 150, "--save-writer-cpu-percent", "150"},
                        {19, std::numeric_limits<double>::quiet_NaN(), "--save-writer-cpu-percent", "nan"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.flag) + " " + c.value);
    CheckpointSettings s;
    s.writer_nice = c.nice;
    s.writer_cpu_percent = c.pct;
    Diagnostics d;
    check_settings(s, d);
    ASSERT_EQ(d.error_count(), 1u) << d.format();
    const std::string text = d.format();
    EXPECT_TRUE(contains(text, c.flag)) << text;
    EXPECT_TRUE(contains(text, c.value)) << text;
    EXPECT_TRUE(contains(text, "give ")) << text;
  }
  CheckpointSettings ok;
  ok.writer_nice = 0;
  ok.writer_cpu_percent = 100;
  Diagnostics d;
  check_settings(ok, d);
  EXPECT_EQ(d.error_count(), 0u) << d.format();
  test::run_ranks(1, [&](int, Communicator& comm) {
    RankExchange ex(comm, nullptr);
    for (double share : {0.0, 1.5}) {
      SaveOptions so;
      so.dir = "unused";
      so.writer_cpu_share = share;
      EXPECT_THROW(CheckpointWriter(ex, so), UserError);
    }
  });
}

}  // namespace
}  // namespace zt::ckpt
