// fp32 <-> bf16 conversion on the GPU: round-to-nearest-even at ties, overflow to inf, NaN kept
// NaN (even a signalling NaN whose payload sits only in the low 16 bits), subnormals, signed zero.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "tests/gpu/gpu_test_support.h"

namespace zt::test {
namespace {

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint32_t to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

std::vector<uint16_t> device_f32_to_bf16_bits(Backend& be, const std::vector<float>& x) {
  Buf a(be, x.size() * 2);
  be.f32_to_act(a.get(), x.data(), x.size());
  std::vector<uint16_t> bits(x.size());
  be.copy_to_host(bits.data(), a.get(), x.size() * 2);
  return bits;
}

TEST(GpuConvert, RoundToNearestEvenEdgeCases) {
  auto gpu = make_cuda_backend(0);
  struct Case {
    uint32_t in;
    uint16_t want;
    const char* what;
  };
  const Case cases[] = {
      {0x3F808000u, 0x3F80u, "1 + 2^-8: tie, even neighbour is below"},
      {0x3F818000u, 0x3F82u, "1 + 3*2^-8: tie, even neighbour is above"},
      {0xBF808000u, 0xBF80u, "negative tie rounds to even"},
      {0x3F808001u, 0x3F81u, "just above the tie rounds up"},
      {0x3F807FFFu, 0x3F80u, "just below the tie rounds down"},
      {0x7F7FFFFFu, 0x7F80u, "max finite fp32 overflows to +inf"},
      {0x7F7F7FFFu, 0x7F7Fu, "largest value that stays finite"},
      {0x7F800000u, 0x7F80u, "+inf"},
      {0xFF800000u, 0xFF80u, "-inf"},
      {0x00000000u, 0x0000u, "+0"},
      {0x80000000u, 0x8000u, "-0"},
      {0x00000001u, 0x0000u, "smallest fp32 subnormal rounds to +0"},
      {0x00018000u, 0x0002u, "subnormal tie rounds to even (up)"},
      {0x00008000u, 0x0000u, "subnormal tie rounds to even (down)"},
      {0x00400000u, 0x0040u, "subnormal exactly representable"},
      {0x807F0000u, 0x807Fu, "negative subnormal exactly representable"},
  };
  std::vector<float> in;
  for (const auto& c : cases) in.push_back(from_bits(c.in));
  auto got = device_f32_to_bf16_bits(*gpu, in);
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(got[i], cases[i].want) << cases[i].what << ": input 0x" << std::hex << cases[i].in;
    EXPECT_EQ(bf16_bits_rne(in[i]), cases[i].want) << "host reference disagrees: " << cases[i].what;
  }
  // NaNs: quiet, signalling with payload only in the dropped low bits, negative.
  std::vector<float> nans = {from_bits(0x7FC00000u), from_bits(0x7F800001u), from_bits(0xFFC00001u)};
  auto nb = device_f32_to_bf16_bits(*gpu, nans);
  for (size_t i = 0; i < nans.size(); ++i)
    EXPECT_TRUE(std::isnan(bf16_to_float(nb[i]))) << "NaN input 0x" << std::hex << to_bits(nans[i]) << " became 0x"
                                                  << nb[i];
}

TEST(GpuConvert, RandomValuesMatchHostRne) {
  auto gpu = make_cuda_backend(0);
  std::mt19937 rng(99);
  std::vector<float> x(1 << 16);
  for (auto& v : x) {
    do v = from_bits(static_cast<uint32_t>(rng()));
    while (std::isnan(v));
  }
  auto got = device_f32_to_bf16_bits(*gpu, x);
  size_t bad = 0;
  for (size_t i = 0; i < x.size(); ++i) bad += got[i] != bf16_bits_rne(x[i]);
  EXPECT_EQ(bad, 0u) << "of " << x.size() << " random bit patterns";
}

TEST(GpuConvert, EveryBf16WidensExactly) {
  auto gpu = make_cuda_backend(0);
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  Buf a(*gpu, all.size() * 2);
  gpu->copy_to_device(a.get(), all.data(), all.size() * 2);
  std::vector<float> out(all.size(), std::numeric_limits<float>::quiet_NaN());
  gpu->act_to_f32(out.data(), a.get(), all.size());
  size_t bad = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    const float want = bf16_to_float(all[i]);
    bad += std::isnan(want) ? !std::isnan(out[i]) : to_bits(out[i]) != to_bits(want);
  }
  EXPECT_EQ(bad, 0u);
}

}  // namespace
}  // namespace zt::test
