// Gradient-norm helpers: sum of squares (values, thread-count independence, non-finite
// propagation), the finite check, DeepSpeed's clip coefficient and the folded unscale-and-clip.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "optim/grad_clip.h"

namespace zt {
namespace {

TEST(SumSquares, HandValues) {
  EXPECT_EQ(sum_squares(std::vector<float>{3.0f, 4.0f}), 25.0);
  EXPECT_EQ(sum_squares(std::vector<float>{}), 0.0);
  EXPECT_EQ(sum_squares(std::vector<float>(10001, 0.5f)), 2500.25);  // spans 3 blocks, exact
  const float big = std::numeric_limits<float>::max();
  const double want = 2.0 * static_cast<double>(big) * static_cast<double>(big);
  EXPECT_EQ(sum_squares(std::vector<float>{big, -big}), want);  // no overflow in double
}

TEST(SumSquares, SameBitsForAnyThreadCount) {
  std::vector<float> x(300001);
  uint32_t s = 12345;
  for (auto& e : x) {
    s = s * 1664525u + 1013904223u;
    e = static_cast<float>(static_cast<int32_t>(s >> 8) - (1 << 23)) * 1e-7f;
  }
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const double one = sum_squares(x);
  omp_set_num_threads(3);
  const double three = sum_squares(x);
  omp_set_num_threads(saved);
  EXPECT_EQ(one, three);
  // Same value as a plain double sum up to rounding (a different order).
  double naive = 0.0;
  for (float e : x) naive += static_cast<double>(e) * e;
  EXPECT_NEAR(one, naive, 1e-12 * naive);
}

TEST(SumSquares, NonFiniteElementMakesTheSumNonFinite) {
  std::vector<float> x(9000, 1.0f);
  x[8500] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(std::isfinite(sum_squares(x)));
  x[8500] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(std::isfinite(sum_squares(x)));
}

TEST(AllFinite, DetectsInfAndNanAnywhere) {
  std::vector<float> x(100000, 0.25f);
  x[7] = std::numeric_limits<float>::max();
  x[8] = std::numeric_limits<float>::denorm_min();
  EXPECT_TRUE(all_finite(x));
  for (float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN()}) {
    for (size_t at : {size_t{0}, size_t{65536}, x.size() - 1}) {
      auto y = x;
      y[at] = bad;
      EXPECT_FALSE(all_finite(y)) << "at " << at;
    }
  }
  EXPECT_TRUE(all_finite(std::vector<float>{}));
}

TEST(Clip, CoefficientFollowsDeepSpeed) {
  EXPECT_DOUBLE_EQ(clip_coefficient(10.0, 1.0), 1.0 / 10.000001);  // max_norm / (norm + 1e-6)
  EXPECT_EQ(clip_coefficient(0.5, 1.0), 1.0);                       // below the limit: untouched
  EXPECT_DOUBLE_EQ(clip_coefficient(1.0, 1.0), 1.0 / 1.000001);     // at the limit the 1e-6 still clips
  EXPECT_EQ(clip_coefficient(1e9, 0.0), 1.0);                       // clipping off
}

TEST(Clip, UnscaleAndClipMultiplier) {
  // scaled norm 1024 at loss scale 128: true norm 8 > 1 -> combined = 128 * (8 + 1e-6) / 1.
  EXPECT_DOUBLE_EQ(unscale_and_clip_multiplier(1024.0, 128.0, 1.0), 1.0 / (128.0 * 8.000001));
  EXPECT_DOUBLE_EQ(unscale_and_clip_multiplier(64.0, 128.0, 1.0), 1.0 / 128.0);  // true norm 0.5: unscale only
  EXPECT_DOUBLE_EQ(unscale_and_clip_multiplier(1024.0, 128.0, 0.0), 1.0 / 128.0);
}

}  // namespace
}  // namespace zt
