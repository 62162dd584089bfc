// main() for the engine tests: starts MPI (when launched by mpirun), the communicator, the CPU
// backend and the built-in data before GoogleTest runs, and tears them down in order after.
#include <gtest/gtest.h>

#include "tests/engine/engine_test_util.h"

int main(int argc, char** argv) {
  using namespace zt;
  auto& w = test::world();
  w.boot = std::make_unique<Bootstrap>(&argc, &argv);
  w.comm = make_communicator(*w.boot, CommBackend::Auto);
  w.backend = make_cpu_backend();
  w.data = make_synthetic_dataset(3, size_t(1) << 16, 1024);
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  if (w.at_exit) w.at_exit(argc, argv);
  w.comm.reset();
  w.backend.reset();
  w.boot.reset();
  return rc;
}
