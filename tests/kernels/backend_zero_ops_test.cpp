// The Backend operations of the ZeRO step on the CPU backend: sum_squares is optim's fixed-order sum
// (scaled values rounded to fp32 first), scale rounds each product once, and adamw_multi_tensor is
// the AdamW formula per chunk with the working copy written.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "base/adam_math.h"
#include "kernels/backend.h"
#include "optim/grad_clip.h"

namespace zt {
namespace {

std::vector<float> values(size_t n, unsigned seed) {
  std::vector<float> x(n);
  unsigned s = seed;
  for (auto& v : x) {
    s = s * 1664525u + 1013904223u;
    v = float(int(s >> 9) - (1 << 22)) * 1e-6f;
  }
  return x;
}

TEST(BackendZeroOps, SumSquaresIsTheFixedOrderSumOfScaledValues) {
  auto be = make_cpu_backend();
  for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(4096), size_t(4097), size_t(100003)}) {
    const auto x = values(n, unsigned(n) + 3);
    EXPECT_EQ(be->sum_squares(x.data(), n, 1.0f), sum_squares(x)) << n;
    std::vector<float> y(x);
    for (auto& v : y) v = v * 0.37f;
    EXPECT_EQ(be->sum_squares(x.data(), n, 0.37f), sum_squares(y)) << n;
  }
  std::vector<float> bad = values(9000, 1);
  bad[8500] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(std::isfinite(be->sum_squares(bad.data(), bad.size(), 1.0f)));
}

TEST(BackendZeroOps, ScaleRoundsEachProductOnce) {
  auto be = make_cpu_backend();
  auto x = values(70001, 9);
  const auto ref = x;
  be->scale(x.data(), 1.0f / 3.0f, x.size());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(x[i], ref[i] * (1.0f / 3.0f)) << i;
}

TEST(BackendZeroOps, AdamWMultiTensorIsTheFormulaPerChunk) {
  auto be = make_cpu_backend();
  const size_t n = 5000;
  auto p = values(n, 4), g = values(n, 5);
  std::vector<float> m(n, 0.0f), v(n, 0.0f), work(n, -7.0f);
  auto pr = p;
  std::vector<float> mr(n, 0.0f), vr(n, 0.0f);
  AdamWHyper h;
  h.lr = 1e-2f;
  h.weight_decay = 0.01f;
  h.step = 1;
  // Three chunks, one empty, the last without a working copy.
  AdamWChunk chunks[3] = {{p.data(), g.data(), m.data(), v.data(), work.data(), 1234},
                          {p.data() + 1234, g.data() + 1234, m.data() + 1234, v.data() + 1234, work.data() + 1234, 0},
                          {p.data() + 1234, g.data() + 1234, m.data() + 1234, v.data() + 1234, nullptr, n - 1234}};
  be->adamw_multi_tensor(chunks, 3, DType::F32, h);
  const AdamScalars s = adam_scalars(h);
  for (size_t i = 0; i < n; ++i) adam_update_element(pr[i], g[i], mr[i], vr[i], s);
  EXPECT_EQ(p, pr);
  EXPECT_EQ(m, mr);
  EXPECT_EQ(v, vr);
  for (size_t i = 0; i < 1234; ++i) ASSERT_EQ(work[i], p[i]) << i;
  for (size_t i = 1234; i < n; ++i) ASSERT_EQ(work[i], -7.0f) << i;  // no working copy requested there
  EXPECT_THROW(be->adamw_multi_tensor(chunks, 1, DType::BF16, h), std::invalid_argument);
}

}  // namespace
}  // namespace zt
