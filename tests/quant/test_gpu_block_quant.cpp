// The CUDA block quantizers (kernels/quant/block_quant_cuda.h) against the CPU ones, bit for bit
// (NaN payloads aside):
// int8 and int4, fp32 and bf16 in, fp32 and bf16 out, dequantize-and-add, odd lengths, zero and
// subnormal blocks, and the status of blocks holding inf or NaN. Exits 77 without a GPU.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "base/cuda_check.h"
#include "base/half_float.h"
#include "kernels/quant/block_quant.h"
#include "kernels/quant/block_quant_cuda.h"
#include "tests/quant/quant_test_util.h"

namespace zt::quant {
namespace {

// A device copy of a host vector, freed on destruction.
template <class T>
class DeviceVec {
 public:
  explicit DeviceVec(const std::vector<T>& h) : n_(h.size()) {
    ZT_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&p_), n_ * sizeof(T) + 1));
    if (n_) ZT_CUDA_CHECK(cudaMemcpy(p_, h.data(), n_ * sizeof(T), cudaMemcpyHostToDevice));
  }
  explicit DeviceVec(size_t n) : DeviceVec(std::vector<T>(n)) {}
  DeviceVec(const DeviceVec&) = delete;
  DeviceVec& operator=(const DeviceVec&) = delete;
  ~DeviceVec() { cudaFree(p_); }
  T* get() const { return p_; }
  std::vector<T> host() const {
    std::vector<T> h(n_);
    if (n_) ZT_CUDA_CHECK(cudaMemcpy(h.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }

 private:
  size_t n_;
  T* p_ = nullptr;
};

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}
// The same bits, except that any NaN equals any NaN: the device's arithmetic makes its own NaN
// (0x7fffffff) where the host's passes its operand's on; the format leaves NaN payloads open.
bool same_values(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(std::isnan(a[i]) && std::isnan(b[i])) && std::memcmp(&a[i], &b[i], 4) != 0) return false;
  return true;
}
bool same_values(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b) {
  if (a.size() != b.size()) return false;
  auto nan = [](uint16_t h) { return (h & 0x7fffu) > 0x7f80u; };
  for (size_t i = 0; i < a.size(); ++i)
    if (!(nan(a[i]) && nan(b[i])) && a[i] != b[i]) return false;
  return true;
}

void compare_one(const std::vector<float>& x, const QuantLayout& l) {
  SCOPED_TRACE(std::string(quant_bits_name(l.bits)) + " n=" + std::to_string(l.n) + " block=" + std::to_string(l.block));
  std::vector<uint16_t> xb(l.n);
  for (size_t i = 0; i < l.n; ++i) xb[i] = f32_to_bf16_bits(x[i]);
  // CPU reference.
  std::vector<uint8_t> q(l.q_bytes()), qb(l.q_bytes());
  std::vector<float> s(l.blocks()), sb(l.blocks()), d(l.n), a = x;
  std::vector<uint16_t> h(l.n);
  const QuantStatus st = quantize(x.data(), l, q.data(), s.data());
  quantize_bf16(xb.data(), l, qb.data(), sb.data());
  dequantize(q.data(), s.data(), l, d.data());
  dequantize_bf16(q.data(), s.data(), l, h.data());
  dequantize_add(q.data(), s.data(), l, a.data());
  // Device.
  DeviceVec<float> dx(x), ds(l.blocks()), dsb(l.blocks()), dd(l.n), da(x);
  DeviceVec<uint16_t> dxb(xb), dh(l.n);
  DeviceVec<uint8_t> dq(l.q_bytes()), dqb(l.q_bytes());
  DeviceVec<cuda::DeviceQuantStatus> dst(1);
  cuda::reset_status(dst.get(), nullptr);
  cuda::quantize(dx.get(), l, dq.get(), ds.get(), dst.get(), nullptr);
  cuda::quantize_bf16(dxb.get(), l, dqb.get(), dsb.get(), nullptr, nullptr);
  cuda::dequantize(dq.get(), ds.get(), l, dd.get(), nullptr);
  cuda::dequantize_bf16(dq.get(), ds.get(), l, dh.get(), nullptr);
  cuda::dequantize_add(dq.get(), ds.get(), l, da.get(), nullptr);
  ZT_CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(same_bits(dq.host(), q)) << "q";
  EXPECT_TRUE(same_values(ds.host(), s)) << "scales";
  EXPECT_TRUE(same_bits(dqb.host(), qb)) << "q from bf16";
  EXPECT_TRUE(same_values(dsb.host(), sb)) << "scales from bf16";
  EXPECT_TRUE(same_values(dd.host(), d)) << "dequantize";
  EXPECT_TRUE(same_values(dh.host(), h)) << "dequantize_bf16";
  EXPECT_TRUE(same_values(da.host(), a)) << "dequantize_add";
  const QuantStatus dev = cuda::to_status(dst.host()[0]);
  EXPECT_EQ(dev.bad_blocks, st.bad_blocks);
  EXPECT_EQ(dev.first_bad_block, st.first_bad_block);
}

TEST(GpuBlockQuant, MatchesTheCpuBitForBit) {
  for (QuantBits bits : {QuantBits::Int8, QuantBits::Int4}) {
    for (size_t n : {1u, 7u, 8u, 4097u, 3u * 8000u + 37u}) {
      const QuantLayout l{bits, n, size_t(n < 8 ? 8 : 8000)};
      compare_one(test::varied_values(n, l.block, 40 + n), l);
    }
    // Ties, a zero block, subnormals, and non-finite blocks (status and NaN scales).
    const size_t block = 1024, n = 6 * block + 5;
    auto x = test::varied_values(n, block, 41);
    for (size_t i = 0; i < 64; ++i) x[i] = (float(int(i) - 32) + 0.5f) * 0.25f;
    x[64] = 127 * 0.25f;
    for (size_t i = block; i < 2 * block; ++i) x[i] = (i % 2) ? -0.0f : 0.0f;
    for (size_t i = 2 * block; i < 3 * block; ++i) x[i] = float(i % 200) * std::numeric_limits<float>::denorm_min();
    x[4 * block + 9] = std::numeric_limits<float>::infinity();
    x[3 * block + 1] = std::numeric_limits<float>::quiet_NaN();
    compare_one(x, QuantLayout{bits, n, block});
  }
}

}  // namespace
}  // namespace zt::quant
