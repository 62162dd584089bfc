// CompressedAllReduce under mpirun (1, 2, 3, 4 and 8 ranks): each rank's result and both error
// buffers equal, bit for bit, a scalar reference that plays every rank in one process (no packing,
// no collectives); the padding rule; the sign of zero; the byte records; and the telescoping bound
// on the mean of repeated calls (error feedback: the errors carry what the signs lost).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

#include "collectives/bootstrap.h"
#include "collectives/compressed_allreduce.h"
#include "collectives/mpi_communicator.h"

namespace zt {
namespace {

MpiCommunicator* g_comm = nullptr;

// Rank r's input of call t: values of both signs over a few decades, with exact zeros and −0.
float input(int r, int t, size_t i) {
  uint64_t h = (uint64_t(r) * 0x9E3779B97F4A7C15ull) ^ (uint64_t(t) * 0xC2B2AE3D27D4EB4Full) ^ (uint64_t(i) * 0xD6E8FEB86659FD93ull);
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 32;
  if (h % 13 == 0) return 0.0f;
  if (h % 17 == 0) return -0.0f;
  const float mag = float((h >> 8) % 100000) / 1000.0f * (h % 3 == 0 ? 0.01f : 1.0f);
  return (h & 1) ? mag : -mag;
}

float ref_sign(float v) { return v < 0.0f ? -1.0f : 1.0f; }

float ref_rms(const std::vector<float>& v, size_t begin, size_t n) {
  double sq = 0;
  for (size_t i = begin; i < begin + n; ++i) sq += double(v[i]) * double(v[i]);
  return float(std::sqrt(sq) / std::sqrt(double(n)));
}

// Every rank's state, played in one process.
struct Reference {
  int W;
  size_t n, pad, chunk;
  std::vector<std::vector<float>> worker, server;  // per rank
  Reference(int w, size_t len) : W(w), n(len) {
    const size_t unit = size_t(W) * std::lcm(size_t(W), size_t(8));
    pad = (n + unit - 1) / unit * unit;
    chunk = pad / size_t(W);
    worker.assign(size_t(W), std::vector<float>(pad, 0.0f));
    server.assign(size_t(W), std::vector<float>(chunk, 0.0f));
  }
  // inputs[r]: rank r's n values. Returns the result every rank receives.
  std::vector<float> call(const std::vector<std::vector<float>>& inputs) {
    std::vector<std::vector<float>> signs(static_cast<size_t>(W));
    std::vector<float> scale(static_cast<size_t>(W));
    for (int r = 0; r < W; ++r) {
      std::vector<float> v(pad, 0.0f);
      for (size_t i = 0; i < n; ++i) v[i] = inputs[size_t(r)][i];
      for (size_t i = 0; i < pad; ++i) v[i] += worker[size_t(r)][i];
      scale[size_t(r)] = ref_rms(v, 0, pad);
      signs[size_t(r)].resize(pad);
      for (size_t i = 0; i < pad; ++i) {
        signs[size_t(r)][i] = ref_sign(v[i]);
        worker[size_t(r)][i] = v[i] - scale[size_t(r)] * signs[size_t(r)][i];
      }
    }
    std::vector<float> out(n);
    for (int j = 0; j < W; ++j) {
      std::vector<float> c(chunk);
      for (size_t k = 0; k < chunk; ++k) {
        float acc = 0.0f;
        for (int i = 0; i < W; ++i) acc += signs[size_t(i)][size_t(j) * chunk + k] * (scale[size_t(i)] * float(1.0 / W));
        c[k] = acc + server[size_t(j)][k];
      }
      const float sj = ref_rms(c, 0, chunk);
      for (size_t k = 0; k < chunk; ++k) {
        server[size_t(j)][k] = c[k] - sj * ref_sign(c[k]);
        const size_t e = size_t(j) * chunk + k;
        if (e < n) out[e] = sj * ref_sign(c[k]);
      }
    }
    return out;
  }
};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
}

TEST(CompressedAllReduce, PaddedLengthRule) {
  EXPECT_EQ(CompressedAllReduce::padded_length(0, 1), 0u);
  EXPECT_EQ(CompressedAllReduce::padded_length(1, 1), 8u);
  EXPECT_EQ(CompressedAllReduce::padded_length(16, 2), 16u);   // 2 · lcm(2, 8) = 16
  EXPECT_EQ(CompressedAllReduce::padded_length(17, 2), 32u);
  EXPECT_EQ(CompressedAllReduce::padded_length(1, 3), 72u);    // 3 · 24
  EXPECT_EQ(CompressedAllReduce::padded_length(73, 3), 144u);
  EXPECT_EQ(CompressedAllReduce::padded_length(64, 8), 64u);   // 8 · 8
  EXPECT_EQ(CompressedAllReduce::padded_length(65, 8), 128u);
  EXPECT_EQ(CompressedAllReduce::padded_length(1, 6), 144u);   // 6 · 24
}

TEST(CompressedAllReduce, BitForBitAgainstScalarReference) {
  Communicator& c = *g_comm;
  const int W = c.world_size(), r = c.rank();
  const size_t unit = size_t(W) * std::lcm(size_t(W), size_t(8));
  const size_t lengths[] = {0, 1, 7, unit - 1, unit, unit + 1, 3 * unit + 5, 1000000};
  CompressedAllReduce car(c);
  for (size_t n : lengths) {
    Reference ref(W, n);
    ErrorFeedback e;
    for (int t = 0; t < 3; ++t) {  // the errors of one call feed the next
      std::vector<std::vector<float>> in(static_cast<size_t>(W), std::vector<float>(n));
      for (int q = 0; q < W; ++q)
        for (size_t i = 0; i < n; ++i) in[size_t(q)][i] = input(q, t, i);
      std::vector<float> x = in[size_t(r)];
      car.run(x.data(), n, e);
      const std::vector<float> want = ref.call(in);
      ASSERT_TRUE(same_bits(x, want)) << "result, n=" << n << " call " << t;
      if (n == 0) {
        EXPECT_TRUE(e.worker.empty() && e.server.empty());
        continue;
      }
      ASSERT_TRUE(same_bits(e.worker, ref.worker[size_t(r)])) << "worker error, n=" << n << " call " << t;
      ASSERT_TRUE(same_bits(e.server, ref.server[size_t(r)])) << "server error, n=" << n << " call " << t;
    }
  }
}

// Several tensors in one call (empty ones among them) equal the single calls bit for bit, over
// repeated calls, in 1 + 3 collectives carrying the single calls' bytes.
TEST(CompressedAllReduce, ManyTensorsInOneCallEqualTheSingleCalls) {
  Communicator& c = *g_comm;
  const int W = c.world_size(), r = c.rank();
  const std::vector<size_t> lengths = {7, 0, 1000, 1, 4096, 0, 333};
  CompressedAllReduce car(c);
  std::vector<ErrorFeedback> one(lengths.size()), many(lengths.size());
  for (int t = 0; t < 3; ++t) {
    std::vector<std::vector<float>> a(lengths.size()), b(lengths.size());
    std::vector<CompressedAllReduce::Tensor> batch;
    CompressedAllReduce::CallBytes want;
    for (size_t k = 0; k < lengths.size(); ++k) {
      for (size_t i = 0; i < lengths[k]; ++i) a[k].push_back(input(r, t, i + 7919 * k));
      b[k] = a[k];
      car.run(a[k].data(), a[k].size(), one[k]);
      batch.push_back({b[k].data(), b[k].size(), &many[k]});
      const auto cb = CompressedAllReduce::call_bytes(lengths[k], W);
      want.all_to_all += cb.all_to_all;
      want.all_gather += cb.all_gather;
    }
    c.reset_stats();
    car.run(batch);
    const CommStats s = c.stats();
    EXPECT_EQ(s[CommOp::AllToAll].calls, 1u);
    EXPECT_EQ(s[CommOp::AllGather].calls, 3u);
    EXPECT_EQ(s[CommOp::AllToAll].bytes, want.all_to_all);
    EXPECT_EQ(s[CommOp::AllGather].bytes, want.all_gather);
    for (size_t k = 0; k < lengths.size(); ++k) {
      ASSERT_TRUE(same_bits(a[k], b[k])) << "tensor " << k << " call " << t;
      ASSERT_TRUE(same_bits(one[k].worker, many[k].worker)) << "tensor " << k << " call " << t;
      ASSERT_TRUE(same_bits(one[k].server, many[k].server)) << "tensor " << k << " call " << t;
    }
  }
}

// DeepSpeed's packing: numpy's packbits order (the first element in the high bit), a set bit for
// v >= 0 — zero, −0 and NaN included.
TEST(CompressedAllReduce, SignsPackHighBitFirstWithZeroPositive) {
  const float v[8] = {-1.0f, 2.0f, 0.0f, -0.0f, NAN, -3.0f, 5.0f, -1e-30f};
  EXPECT_EQ(CompressedAllReduce::sign_byte(v), 0x7A);  // 0111 1010
  const float all_neg[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
  EXPECT_EQ(CompressedAllReduce::sign_byte(all_neg), 0x00);
  const float first_pos[8] = {1, -1, -1, -1, -1, -1, -1, -1};
  EXPECT_EQ(CompressedAllReduce::sign_byte(first_pos), 0x80);
}

// Through a whole call: zeros and −0 come back positive, a negative element negative.
TEST(CompressedAllReduce, ZeroIsPositive) {
  Communicator& c = *g_comm;
  const int W = c.world_size();
  CompressedAllReduce car(c);
  ErrorFeedback e;
  std::vector<float> y(16 * size_t(W), 0.0f);
  y[1] = -0.0f;
  y[3] = -1.0f;
  car.run(y.data(), y.size(), e);
  EXPECT_GT(y[0], 0.0f);
  EXPECT_GT(y[1], 0.0f) << "-0 is positive";
  EXPECT_LT(y[3], 0.0f);
}

TEST(CompressedAllReduce, RecordsTheBytesItSends) {
  Communicator& c = *g_comm;
  const int W = c.world_size();
  CompressedAllReduce car(c);
  ErrorFeedback e;
  const size_t n = 1000;
  std::vector<float> x(n, 1.0f);
  c.reset_stats();
  car.run(x.data(), n, e);
  const CommStats s = c.stats();
  const auto want = CompressedAllReduce::call_bytes(n, W);
  const size_t pad = CompressedAllReduce::padded_length(n, W);
  EXPECT_EQ(s[CommOp::AllToAll].calls, 1u);
  EXPECT_EQ(s[CommOp::AllToAll].bytes, want.all_to_all);
  EXPECT_EQ(want.all_to_all, pad / 8);
  EXPECT_EQ(s[CommOp::AllGather].calls, 3u);
  EXPECT_EQ(s[CommOp::AllGather].bytes, want.all_gather);
  EXPECT_EQ(s[CommOp::AllReduce].calls, 0u);
  // The wire: (W−1)/W of each packed buffer and W−1 scales, in each phase; within DeepSpeed's
  // 2(W−1)/W · n_pad/8 + 8W, about 1/16 of an fp16 all-reduce's 2(W−1)/W · 2n.
  const uint64_t wire = CompressedAllReduce::wire_bytes(n, W);
  EXPECT_LE(wire, 2 * uint64_t(W - 1) * pad / 8 / uint64_t(W) + 8 * uint64_t(W));
  if (W > 1) {  // a large tensor: the padding and the scales vanish beside the signs
    const size_t big = 1000000;
    EXPECT_LT(double(CompressedAllReduce::wire_bytes(big, W)), 2.0 * (W - 1) / W * 2.0 * double(big) / 15.9);
  }
  EXPECT_EQ(wire, W == 1 ? 0u : 2 * uint64_t(W - 1) * (pad / 8 / uint64_t(W) + 4));
}

// Constant inputs x_r for T calls: Σ_t out_t = T·mean(x) − mean_r(worker_r) − server (chunk-wise),
// so the mean result approaches mean(x) as (‖mean worker‖ + ‖server‖) / T.
TEST(CompressedAllReduce, TelescopingBoundOnTheMean) {
  Communicator& c = *g_comm;
  const int W = c.world_size(), r = c.rank();
  const size_t n = 777;
  CompressedAllReduce car(c);
  ErrorFeedback e;
  std::vector<double> mean_x(n, 0.0), sum_out(n, 0.0);
  for (int q = 0; q < W; ++q)
    for (size_t i = 0; i < n; ++i) mean_x[i] += double(input(q, 0, i)) / W;
  double previous_gap = INFINITY;
  int t = 0;
  for (int T : {10, 50, 200}) {
    for (; t < T; ++t) {
      std::vector<float> x(n);
      for (size_t i = 0; i < n; ++i) x[i] = input(r, 0, i);
      car.run(x.data(), n, e);
      for (size_t i = 0; i < n; ++i) sum_out[i] += x[i];
    }
    // Every rank's worker error and the whole server error (each rank holds its chunk).
    const size_t pad = e.worker.size(), chunk = e.server.size();
    std::vector<float> workers(pad * size_t(W)), servers(pad);
    std::memcpy(workers.data() + size_t(r) * pad, e.worker.data(), pad * 4);
    std::memcpy(servers.data() + size_t(r) * chunk, e.server.data(), chunk * 4);
    c.all_gather(workers.data() + size_t(r) * pad, workers.data(), workers.size(), DType::F32);
    c.all_gather(servers.data() + size_t(r) * chunk, servers.data(), servers.size(), DType::F32);
    double gap = 0, err = 0, identity = 0;
    for (size_t i = 0; i < n; ++i) {
      double mean_w = 0;
      for (int q = 0; q < W; ++q) mean_w += double(workers[size_t(q) * pad + i]) / W;
      const double d = sum_out[i] / T - mean_x[i];
      gap += d * d;
      err += (std::fabs(mean_w) + std::fabs(servers[i])) * (std::fabs(mean_w) + std::fabs(servers[i]));
      identity = std::max(identity, std::fabs(sum_out[i] - (T * mean_x[i] - mean_w - servers[i])));
    }
    gap = std::sqrt(gap);
    EXPECT_LE(gap, 2.0 * std::sqrt(err) / T + 1e-3) << "T=" << T;
    EXPECT_LT(identity, 1e-2 * T) << "T=" << T;  // the identity up to fp32 roundings of T calls
    EXPECT_LT(gap, previous_gap) << "T=" << T;
    previous_gap = gap;
  }
}

}  // namespace
}  // namespace zt

int main(int argc, char** argv) {
  zt::Bootstrap boot(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  zt::CommOptions options = zt::CommOptions::from_env();
  options.timeout_s = 120;
  int rc;
  {
    zt::MpiCommunicator comm(boot, options);
    zt::g_comm = &comm;
    rc = RUN_ALL_TESTS();
    zt::g_comm = nullptr;
  }
  return rc;
}
