// main() for the GPU test binaries: without a usable GPU it prints a SKIPPED line and exits with
// CTest's skip code 77, so the tests report as skipped (never as passed-with-nothing or failed).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "tests/gpu/gpu_test_support.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::string why;
  if (!zt::test::gpu_available(&why)) {
    std::printf("[  SKIPPED ] no usable GPU (%s): GPU tests skipped\n", why.c_str());
    return 77;
  }
  return RUN_ALL_TESTS();
}
