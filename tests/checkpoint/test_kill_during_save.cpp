// kill -9 during saves: a driver saves back to back and is killed at random moments, 25 times;
// after each kill a load of `latest` (another world size and stage, every block verified) must
// succeed and hold one whole generation at least as new as the last save the driver finished.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <random>
#include <thread>

#include "runtime/checkpoint/file_io.h"
#include "tests/checkpoint/ckpt_test_util.h"
#include "tests/checkpoint/thread_comm.h"

namespace zt::ckpt {
namespace {

struct Driver {
  pid_t pid = -1;
  int out = -1;
  std::string text;
  void start(const std::string& dir, const std::string& saves) {
    int p[2];
    ASSERT_EQ(::pipe(p), 0);
    pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::dup2(p[1], 1);
      ::close(p[0]);
      ::execl(ZT_KILL_DRIVER, ZT_KILL_DRIVER, dir.c_str(), saves.c_str(), (char*)nullptr);
      ::_exit(127);
    }
    ::close(p[1]);
    out = p[0];
  }
  // Reads what the driver printed until `line` appears (blocking).
  void wait_for(const std::string& line) {
    char b[256];
    while (text.find(line) == std::string::npos) {
      const ssize_t n = ::read(out, b, sizeof b);
      if (n <= 0) return;
      text.append(b, size_t(n));
    }
  }
  int finish(bool kill9) {
    if (kill9) ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    char b[4096];
    ssize_t n;
    while ((n = ::read(out, b, sizeof b)) > 0) text.append(b, size_t(n));
    ::close(out);
    return status;
  }
  long last(const std::string& word) const {
    const auto at = text.rfind(word + " ");
    return at == std::string::npos ? 0 : std::atol(text.c_str() + at + word.size() + 1);
  }
};

TEST(KillDuringSave, LatestAlwaysLoads) {
  test::TempDir dir;
  const auto m = test::kill_driver_model();
  std::mt19937 rng(12345);
  // How long one save takes here, to spread the kills over whole saves.
  const auto t0 = std::chrono::steady_clock::now();
  {
    Driver d;
    d.start(dir.path(), "3");
    ASSERT_EQ(d.finish(false), 0) << d.text;
  }
  const double save_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 3;
  std::uniform_real_distribution<double> delay(0.0, 2.0 * save_s);
  int kills = 0, mid_save = 0;
  for (int round = 0; round < 25; ++round) {
    SCOPED_TRACE("kill " + std::to_string(round));
    Driver d;
    d.start(dir.path(), "0");
    d.wait_for("begin 1");
    std::this_thread::sleep_for(std::chrono::duration<double>(delay(rng)));
    const int status = d.finish(true);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the driver ended by itself: " << d.text;
    ++kills;
    const long begun = d.last("begin"), saved = d.last("saved");
    mid_save += begun > saved;
    // latest names a complete save of one generation, at least as new as the last finished one.
    LoadOptions o;
    o.path = dir.path();
    std::vector<int64_t> steps(3, -1);
    std::atomic<int64_t> bad{0};
    test::run_ranks(3, [&](int rank, Communicator& comm) {
      test::FakeShardedState st(m, 3, rank, 1);
      RankExchange ex(comm);
      const auto r = load_checkpoint(st, ex, o);
      steps[size_t(rank)] = r.manifest.step();
      bad += st.mismatches(r.manifest.step(), st.arrays());
    });
    EXPECT_EQ(bad, 0);
    EXPECT_EQ(steps[1], steps[0]) << "every rank loads the same save";
    EXPECT_EQ(steps[2], steps[0]) << "every rank loads the same save";
    // A run restarted after a kill starts again at generation 1, so only the "saved" lines of this
    // run bound what latest must hold.
    if (saved > 0) {
      EXPECT_GE(steps[0], saved);
    }
  }
  EXPECT_GE(kills, 20);
  EXPECT_GE(mid_save, 10) << "most kills should land inside a save";
  std::printf("%d kills, %d inside a save (one save: %.1f ms)\n", kills, mid_save, 1e3 * save_s);
  // The next save cleans up after the killed ones.
  Driver d;
  d.start(dir.path(), "1");
  ASSERT_EQ(d.finish(false), 0);
  for (const auto& n : list_directory(dir.path()))
    EXPECT_TRUE(n == "latest" || n.rfind("slot", 0) == 0) << "left behind: " << n;
}

}  // namespace
}  // namespace zt::ckpt
