// The one message format every library check prints before it aborts (base/check.h).
#include <gtest/gtest.h>

#include "base/check.h"

namespace zt {
namespace {

TEST(CheckFormat, NamesFileLineCallErrorAndHint) {
  CheckFailure f;
  f.library = "CUDA";
  f.file = "kernels/cuda/matmul.cu";
  f.line = 42;
  f.call = "cudaMalloc(&p, n)";
  f.error = "cudaErrorMemoryAllocation: out of memory";
  f.hint = "lower the micro-batch size";
  EXPECT_EQ(format_check_failure(f),
            "kernels/cuda/matmul.cu:42: CUDA call failed: cudaMalloc(&p, n)\n"
            "  error: cudaErrorMemoryAllocation: out of memory\n"
            "  hint: lower the micro-batch size\n");
}

TEST(CheckFormat, RankAndContextWhenKnown) {
  CheckFailure f;
  f.library = "MPI";
  f.file = "collectives/mpi_communicator.cpp";
  f.line = 7;
  f.call = "MPI_Alltoall(...)";
  f.error = "MPI_ERR_TRUNCATE";
  f.context = "reduce_scatter(4096) #3";
  f.rank = 1;
  const std::string m = format_check_failure(f);
  EXPECT_EQ(m.rfind("[rank 1] collectives/mpi_communicator.cpp:7: MPI call failed: MPI_Alltoall(...)\n", 0), 0u);
  EXPECT_NE(m.find("\n  during: reduce_scatter(4096) #3\n"), std::string::npos);
  EXPECT_NE(m.find("\n  hint: "), std::string::npos);  // a default hint when none is given
}

TEST(CheckFormatDeath, CheckFailedPrintsAndAborts) {
  CheckFailure f;
  f.library = "io_uring";
  f.file = "offload/aio_uring.cpp";
  f.line = 3;
  f.call = "io_uring_queue_init(8, &ring, 0)";
  f.error = "Cannot allocate memory";
  f.hint = "raise the memlock limit";
  EXPECT_DEATH(check_failed(f), "offload/aio_uring.cpp:3: io_uring call failed: io_uring_queue_init");
}

}  // namespace
}  // namespace zt
