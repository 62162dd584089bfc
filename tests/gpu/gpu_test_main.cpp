// main() for the GPU test binaries: without a GPU it prints a SKIPPED line and exits with CTest's
// skip code 77, so the binary reports as skipped; a GPU whose runtime fails is a failure (exit 1),
// not "no GPU". CTest reads the exit code alone: a test skipped inside a binary that ran does not
// mark the binary skipped, so its other failures still show.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "tests/gpu/gpu_test_support.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::string why;
  switch (zt::test::probe_gpu(&why)) {
    case zt::test::GpuProbe::Usable: return RUN_ALL_TESTS();
    case zt::test::GpuProbe::None:
      std::printf("[  SKIPPED ] no GPU (%s): GPU tests skipped\n", why.c_str());
      return 77;
    case zt::test::GpuProbe::Broken: break;
  }
  std::fprintf(stderr, "FAILED: the CUDA runtime cannot use this machine's GPU (%s)\n", why.c_str());
  return 1;
}
