// The tiled (flash-style) CPU attention against the straightforward one (tests/model/naive_attention.h):
// T = 1, odd and long T, head sizes 1..128, tiles that do not divide T, q/k tiles of different
// sizes; the saved log-sum-exp against float64; thread-count independence; saved memory O(T).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/cpu_threads.h"
#include "tests/model/naive_attention.h"
#include "tests/model/random_values.h"

namespace zt {
namespace {

using test::randn;

struct Case {
  int B, T, C, NH;
  cpu::AttentionTiles tiles;
};

std::string name(const Case& c) {
  return "B=" + std::to_string(c.B) + " T=" + std::to_string(c.T) + " hs=" + std::to_string(c.C / c.NH) +
         " NH=" + std::to_string(c.NH) + " tiles q=" + std::to_string(c.tiles.q) + " k=" + std::to_string(c.tiles.k);
}

struct Result {
  std::vector<float> out, saved, dqkv;
};

constexpr float kBase = 0.25f;  // dqkv starts here: the backward must add, not overwrite

Result run_tiled(const Case& c, const std::vector<float>& qkv, const std::vector<float>& dout) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Result r;
  r.out.assign(size_t(c.B) * c.T * c.C, nan);  // poisoned: every element must be written
  r.saved.assign(cpu::attention_saved_bytes(c.B, c.T, c.C, c.NH) / 4, nan);
  r.dqkv.assign(qkv.size(), kBase);
  cpu::attention_forward(r.out.data(), r.saved.data(), qkv.data(), c.B, c.T, c.C, c.NH, c.tiles);
  cpu::attention_backward(r.dqkv.data(), dout.data(), qkv.data(), r.saved.data(), c.B, c.T, c.C, c.NH, c.tiles);
  return r;
}

// |a - b| <= atol + rtol·|b|, reporting the worst element.
void expect_close(const std::vector<float>& got, const std::vector<float>& want, double atol, double rtol,
                  const char* what, float offset = 0.f) {
  ASSERT_EQ(got.size(), want.size());
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = double(got[i]) - offset, w = want[i];
    const double excess = std::abs(g - w) - (atol + rtol * std::abs(w));
    if (!(excess <= worst)) {  // NaN counts as a failure
      worst = std::isnan(excess) ? INFINITY : excess;
      at = i;
    }
  }
  EXPECT_EQ(worst, 0) << what << ": element " << at << " got " << got[at] - offset << " want " << want[at];
}

void check_against_naive(const Case& c) {
  SCOPED_TRACE(name(c));
  const size_t nqkv = size_t(c.B) * c.T * 3 * c.C, nout = size_t(c.B) * c.T * c.C;
  const auto qkv = randn(nqkv, uint32_t(c.T * 131 + c.C));
  const auto dout = randn(nout, uint32_t(c.T * 17 + c.NH));
  const Result r = run_tiled(c, qkv, dout);

  std::vector<float> out(nout), att(size_t(c.B) * c.NH * c.T * c.T), dqkv(nqkv, 0.f);
  test::naive_attention_forward(out.data(), att.data(), qkv.data(), c.B, c.T, c.C, c.NH);
  test::naive_attention_backward(dqkv.data(), dout.data(), qkv.data(), att.data(), c.B, c.T, c.C, c.NH);
  expect_close(r.out, out, 2e-6, 1e-4, "out");
  expect_close(r.dqkv, dqkv, 2e-5, 1e-3, "dqkv", kBase);

  // The saved log-sum-exp, against float64: LSE_t = log Σ_{u<=t} exp(q_t·k_u / sqrt(hs)).
  const int hs = c.C / c.NH;
  for (int b = 0; b < c.B; ++b)
    for (int h = 0; h < c.NH; ++h)
      for (int t = 0; t < c.T; ++t) {
        std::vector<double> s;
        double mx = -INFINITY;
        for (int u = 0; u <= t; ++u) {
          double d = 0;
          for (int i = 0; i < hs; ++i)
            d += double(qkv[(size_t(b) * c.T + t) * 3 * c.C + h * hs + i]) *
                 qkv[(size_t(b) * c.T + u) * 3 * c.C + c.C + h * hs + i];
          s.push_back(d / std::sqrt(double(hs)));
          mx = std::max(mx, s.back());
        }
        double z = 0;
        for (double x : s) z += std::exp(x - mx);
        const float got = r.saved[(size_t(b) * c.NH + h) * c.T + t];
        ASSERT_NEAR(got, mx + std::log(z), 1e-5 * (1 + std::abs(mx))) << "lse b=" << b << " h=" << h << " t=" << t;
      }
}

TEST(TiledAttention, SingleToken) {
  check_against_naive({3, 1, 8, 2, cpu::kAttentionTiles});
  check_against_naive({1, 1, 64, 1, {1, 1}});
}

TEST(TiledAttention, OddLengthsAndTilesThatDoNotDivideT) {
  for (cpu::AttentionTiles t : {cpu::AttentionTiles{3, 5}, {5, 3}, {1, 1}, {7, 7}, {2, 64}, {64, 64}})
    check_against_naive({2, 7, 12, 3, t});
  for (cpu::AttentionTiles t : {cpu::AttentionTiles{64, 64}, {16, 32}, {32, 16}, {13, 7}})
    check_against_naive({2, 65, 32, 2, t});
}

TEST(TiledAttention, HeadSizes) {
  for (int hs : {1, 8, 24, 64, 80, 128}) check_against_naive({1, 97, 2 * hs, 2, {32, 24}});
}

TEST(TiledAttention, LongSequences) {
  check_against_naive({1, 1024, 64, 1, cpu::kAttentionTiles});
  check_against_naive({1, 1000, 128, 2, {48, 80}});
}

TEST(TiledAttention, ResultsIndependentOfThreadCount) {
  const Case c{2, 200, 48, 3, cpu::kAttentionTiles};
  const auto qkv = randn(size_t(c.B) * c.T * 3 * c.C, 5), dout = randn(size_t(c.B) * c.T * c.C, 6);
  const int before = cpu_threads();
  set_cpu_threads(1);
  const Result one = run_tiled(c, qkv, dout);
  for (int threads : {2, 3}) {
    set_cpu_threads(threads);
    const Result r = run_tiled(c, qkv, dout);
    EXPECT_EQ(std::memcmp(r.out.data(), one.out.data(), one.out.size() * 4), 0) << threads << " threads";
    EXPECT_EQ(std::memcmp(r.saved.data(), one.saved.data(), one.saved.size() * 4), 0) << threads << " threads";
    EXPECT_EQ(std::memcmp(r.dqkv.data(), one.dqkv.data(), one.dqkv.size() * 4), 0) << threads << " threads";
  }
  set_cpu_threads(before);
}

TEST(TiledAttention, SavesLinearMemoryThroughTheBackend) {
  // LSE per (b, h, t) plus one copy of the output: nothing grows with T².
  auto be = make_cpu_backend();
  const int B = 2, C = 768, NH = 12;
  for (int T : {1, 1024, 4096})
    EXPECT_EQ(be->attention_saved_bytes(B, T, C, NH), size_t(4) * (size_t(B) * NH * T + size_t(B) * T * C)) << T;
}

TEST(TiledAttention, RefusesEmptyTiles) {
  std::vector<float> qkv(3 * 8), out(8), saved(cpu::attention_saved_bytes(1, 1, 8, 1) / 4);
  EXPECT_THROW(cpu::attention_forward(out.data(), saved.data(), qkv.data(), 1, 1, 8, 1, {0, 4}), std::invalid_argument);
}

}  // namespace
}  // namespace zt
