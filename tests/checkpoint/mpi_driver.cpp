// ckpt_mpi_driver save|load DIR STAGE GEN: under mpirun, saves generation GEN of fake states at
// this world size and ZeRO stage, or loads DIR's `latest` and checks that every element and the
// counters are generation GEN's — the real MPI communicator carrying the checkpoint's agreements.
// `tagfail`: every rank saves under its own tag with checkpoint.tag_validation "Fail"; every rank must
// throw the agreed error (which lets a run stop with exit 2 on every rank instead of aborting): exit 2.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "collectives/bootstrap.h"
#include "collectives/factory.h"
#include "runtime/common/diagnostics.h"
#include "runtime/checkpoint/checkpoint_load.h"
#include "runtime/checkpoint/checkpoint_save.h"
#include "tests/checkpoint/ckpt_test_util.h"

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: ckpt_mpi_driver save|load DIR STAGE GEN\n");
    return 2;
  }
  const std::string mode = argv[1], dir = argv[2];
  const int stage = std::atoi(argv[3]);
  const long gen = std::atol(argv[4]);
  zt::Bootstrap boot(&argc, &argv);
  int rc = 0;
  {
    auto comm = zt::make_communicator(boot, zt::CommBackend::Auto);
    const auto m = zt::test::small_model();
    zt::test::FakeShardedState st(m, comm->world_size(), comm->rank(), stage);
    zt::RankExchange ex(*comm);
    try {
      if (mode == "tagfail") {
        st.fill(gen);
        zt::ckpt::SaveOptions o;
        o.dir = dir;
        o.tag_validation = "Fail";
        zt::ckpt::CheckpointWriter w(ex, o);
        zt::ckpt::RunFacts f;
        f.model = m;
        try {
          w.save(st, f, "tag_of_rank" + std::to_string(comm->rank()));
          rc = 1;
        } catch (const zt::AgreedUserError& e) {
          std::printf("rank %d: agreed: %s\n", comm->rank(), e.what());
          rc = 2;
        }
      } else if (mode == "save") {
        st.fill(gen);
        zt::ckpt::SaveOptions o;
        o.dir = dir;
        o.node_local_storage = true;  // one host: its first rank leads, as rank 0 would
        zt::ckpt::CheckpointWriter w(ex, o);
        zt::ckpt::RunFacts f;
        f.model = m;
        const auto r = w.save(st, f, zt::ckpt::default_tag(gen));
        if (comm->rank() == 0) std::printf("%s\n", r.message.c_str());
        rc = r.ok ? 0 : 1;
      } else {
        zt::ckpt::LoadOptions o;
        o.path = dir;
        const auto r = zt::ckpt::load_checkpoint(st, ex, o);
        zt::test::FakeShardedState want(m, 1, 0, 0);
        want.fill(gen);
        const long bad = long(st.mismatches(gen, st.arrays()));
        std::printf("rank %d/%d stage %d: loaded %s (saved at world %d stage %d), %ld mismatches, read %llu bytes from %zu file(s)\n",
                    comm->rank(), comm->world_size(), stage, r.tag_dir.c_str(), r.manifest.world_size, r.manifest.stage, bad,
                    (unsigned long long)r.bytes_read, r.files_read.size());
        rc = bad == 0 && st.counters() == want.counters() && st.commits == 1 ? 0 : 1;
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rank %d: %s\n", comm->rank(), e.what());
      rc = 1;
    }
  }
  return rc;
}
