// base/simd.h: the one SIMD rule — ZT_SIMD forces a level the CPU has, refuses an unknown value or
// one the CPU lacks with a message naming it, and the kernels, the CPU Adam and the checksum follow it.
#include "base/simd.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "tests/common/scoped_env.h"

namespace zt {
namespace {

using test::ScopedEnv;

TEST(Simd, ZtSimdForcesALevel) {
  {
    ScopedEnv env("ZT_SIMD", "scalar");
    EXPECT_EQ(resolve_simd_level(), SimdLevel::Scalar);
  }
  {
    ScopedEnv env("ZT_SIMD", "avx2");
    if (simd_level_supported(SimdLevel::Avx2)) EXPECT_EQ(resolve_simd_level(), SimdLevel::Avx2);
    else EXPECT_THROW(resolve_simd_level(), std::runtime_error);
  }
  {
    ScopedEnv env("ZT_SIMD", "avx512");
    if (simd_level_supported(SimdLevel::Avx512)) EXPECT_EQ(resolve_simd_level(), SimdLevel::Avx512);
    else EXPECT_THROW(resolve_simd_level(), std::runtime_error);
  }
  {
    ScopedEnv env("ZT_SIMD", "sse9");
    try {
      resolve_simd_level();
      FAIL() << "an unknown ZT_SIMD value was accepted";
    } catch (const std::runtime_error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("ZT_SIMD=sse9"), std::string::npos) << msg;
      EXPECT_NE(msg.find("avx512, avx2, scalar"), std::string::npos) << msg;
    }
  }
  EXPECT_EQ(checked_simd_level(SimdLevel::Scalar, "test"), SimdLevel::Scalar);
}

TEST(Simd, AutoAndUnsetPickTheWidestLevel) {
  const SimdLevel widest = simd_level_supported(SimdLevel::Avx512) ? SimdLevel::Avx512
                           : simd_level_supported(SimdLevel::Avx2) ? SimdLevel::Avx2
                                                                     : SimdLevel::Scalar;
  unsetenv("ZT_SIMD");
  EXPECT_EQ(resolve_simd_level(), widest);
  ScopedEnv env("ZT_SIMD", "auto");
  EXPECT_EQ(resolve_simd_level(), widest);
  std::printf("SIMD level here: %s (supported: %s)\n", simd_level_name(widest), supported_simd_levels().c_str());
}

TEST(Simd, UnsupportedLevelIsRefusedNamingWhatTheCpuHas) {
  for (SimdLevel l : {SimdLevel::Avx2, SimdLevel::Avx512}) {
    if (simd_level_supported(l)) continue;
    try {
      checked_simd_level(l, "ZT_SIMD=x");
      FAIL() << simd_level_name(l) << " accepted on a CPU without it";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(supported_simd_levels()), std::string::npos) << e.what();
    }
  }
  for (SimdLevel l : {SimdLevel::Scalar, SimdLevel::Avx2, SimdLevel::Avx512})
    EXPECT_EQ(parse_simd_level(simd_level_name(l)), l);
  EXPECT_THROW(parse_simd_level("auto"), std::invalid_argument);
}

}  // namespace
}  // namespace zt
