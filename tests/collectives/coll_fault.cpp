// Failure scenarios run under mpirun, each expected to end the job non-zero with a message:
//   mismatch  debug mode; rank 1 calls all_gather(4096) where rank 0 calls reduce_scatter(8192)
//   kill      rank 1 _exit(3)s before an all_reduce the others enter
//   hang      rank 1 sleeps instead of calling all_reduce; the others' watchdog fires and names it
//   stop      rank 1 stops itself (SIGSTOP) before all_reduce #3; the others name it as silent
//             (continued by the launcher's abort, it exits at once)
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "collectives/bootstrap.h"
#include "collectives/mpi_communicator.h"

int main(int argc, char** argv) {
  zt::Bootstrap boot(&argc, &argv);
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "mismatch" && mode != "kill" && mode != "hang" && mode != "stop") {
    std::fprintf(stderr, "usage: coll_fault mismatch|kill|hang|stop [timeout_s]\n");
    return 2;
  }
  zt::CommOptions options;
  options.timeout_s = argc > 2 ? std::atof(argv[2]) : 10.0;
  options.debug = mode == "mismatch";
  int rc = 0;
  {
    zt::MpiCommunicator comm(boot, options);
    std::vector<float> buf(8192, 1.0f), out(8192);
    comm.barrier();                                                                       // call #1
    comm.all_reduce(buf.data(), out.data(), 1024, zt::DType::F32, zt::ReduceOp::Sum);  // call #2
    if (mode == "mismatch") {
      const size_t w = size_t(comm.world_size());
      if (comm.rank() == 1) {
        comm.all_gather(buf.data(), out.data(), 4096 / w * w, zt::DType::F32);
      } else {
        comm.reduce_scatter(buf.data(), out.data(), 8192 / w * w, zt::DType::F32, zt::ReduceOp::Sum);
      }
    } else if (mode == "kill" && comm.rank() == 1) {
      std::fprintf(stderr, "[rank 1] coll_fault: exiting with code 3 before all_reduce #3\n");
      std::fflush(stderr);
      _exit(3);
    } else if (mode == "hang" && comm.rank() == 1) {
      sleep(120);
    } else if (mode == "stop" && comm.rank() == 1) {
      raise(SIGSTOP);
      // Only the launcher's abort continues a stopped rank (SIGCONT ahead of its SIGTERM): leave at
      // once, without the teardown's MPI calls, which wait on ranks that are gone (once in CI the
      // job then outlived the test's 50 s bound).
      _exit(4);
    } else {
      comm.all_reduce(buf.data(), out.data(), 1024, zt::DType::F32, zt::ReduceOp::Sum);  // call #3
    }
    std::fprintf(stderr, "[rank %d] coll_fault: the failure was not detected\n", comm.rank());
    rc = 0;  // the wrapper treats a zero exit as a test failure
  }
  return rc;
}
