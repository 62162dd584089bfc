// ZT_SKIP_OR_FAIL_IN_CI(why): what a test does when the machine cannot run it (no mount, no
// privileges to drop): skipped on a developer's machine, a failure under CI=true, where a skip would
// hide the test from every run that counts (the rule tests/monitor/monitor_cli_test.sh follows).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

namespace zt::test {
inline bool in_ci() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::strcmp(ci, "true") == 0;
}
}  // namespace zt::test

#define ZT_SKIP_OR_FAIL_IN_CI(why)                                                           \
  do {                                                                                       \
    if (::zt::test::in_ci()) GTEST_FAIL() << why << " (CI=true: this test must run in CI)"; \
    GTEST_SKIP() << why;                                                                     \
  } while (0)
