// ckpt_kill_driver DIR [SAVES]: saves fake states (2 ranks as threads) into DIR back to back, the
// tag cycling over three names so that existing tags are replaced too. Prints "begin G" before
// and "saved G" after each save of generation G. SAVES = 0 (default) runs until killed.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "runtime/checkpoint/checkpoint_save.h"
#include "tests/checkpoint/ckpt_test_util.h"
#include "tests/checkpoint/thread_comm.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: ckpt_kill_driver DIR [SAVES]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const long saves = argc > 2 ? std::atol(argv[2]) : 0;
  const zt::ModelConfig m = zt::test::kill_driver_model();
  zt::test::run_ranks(2, [&](int rank, zt::Communicator& comm) {
    zt::test::FakeShardedState st(m, 2, rank, 2);
    zt::RankExchange ex(comm);
    zt::ckpt::SaveOptions o;
    o.dir = dir;
    zt::ckpt::CheckpointWriter w(ex, o);
    zt::ckpt::RunFacts f;
    f.model = m;
    for (long g = 1; saves == 0 || g <= saves; ++g) {
      st.fill(g);
      if (rank == 0) std::printf("begin %ld\n", g), std::fflush(stdout);
      const auto r = w.save(st, f, "slot" + std::to_string(g % 3));
      if (!r.ok) throw std::runtime_error(r.message);
      if (rank == 0) std::printf("saved %ld\n", g), std::fflush(stdout);
    }
  });
  return 0;
}
