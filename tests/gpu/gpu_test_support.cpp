// GPU test helpers: device probe, host bf16 rounding, random inputs, buffers and comparisons.
#include "tests/gpu/gpu_test_support.h"

#include <cuda_runtime.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

namespace zt::test {

GpuProbe probe_gpu(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e == cudaSuccess && n > 0) return GpuProbe::Usable;
  if (e == cudaSuccess) {
    if (why) *why = "cudaGetDeviceCount reports 0 devices";
    return GpuProbe::None;
  }
  const std::string err = std::string("cudaGetDeviceCount: ") + cudaGetErrorName(e) + ": " + cudaGetErrorString(e);
  // No device, or no NVIDIA driver at all (no control device node: a machine without a GPU that
  // has the toolkit): nothing to test. Any other error is a broken GPU machine, not an absent GPU.
  const bool no_driver = e == cudaErrorInsufficientDriver && access("/dev/nvidiactl", F_OK) != 0;
  if (why) *why = err + (no_driver ? " (no /dev/nvidiactl: no NVIDIA driver)" : "");
  return e == cudaErrorNoDevice || no_driver ? GpuProbe::None : GpuProbe::Broken;
}

uint16_t bf16_bits_rne(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if (std::isnan(x)) return static_cast<uint16_t>((u >> 16) | 0x40);  // keep sign, force quiet
  const uint32_t lsb = (u >> 16) & 1u;
  u += 0x7FFFu + lsb;
  return static_cast<uint16_t>(u >> 16);
}

float bf16_to_float(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

std::vector<float> random_bf16(size_t n, std::mt19937& rng, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) {
    do x = bf16_round(d(rng));
    while (x == 0.0f);
  }
  return v;
}

std::unique_ptr<Buf> act_from(Backend& be, const std::vector<float>& v) {
  auto b = std::make_unique<Buf>(be, v.size() * dtype_size(be.act_dtype()));
  be.f32_to_act(b->get(), v.data(), v.size());
  return b;
}
std::unique_ptr<Buf> f32_from(Backend& be, const std::vector<float>& v) {
  auto b = std::make_unique<Buf>(be, v.size() * 4);
  be.copy_to_device(b->get(), v.data(), v.size() * 4);
  return b;
}
std::unique_ptr<Buf> i32_from(Backend& be, const std::vector<int32_t>& v) {
  auto b = std::make_unique<Buf>(be, v.size() * 4);
  be.copy_to_device(b->get(), v.data(), v.size() * 4);
  return b;
}
std::unique_ptr<Buf> act_poisoned(Backend& be, size_t n) {
  return act_from(be, std::vector<float>(n, std::numeric_limits<float>::quiet_NaN()));
}
std::unique_ptr<Buf> f32_poisoned(Backend& be, size_t n) {
  return f32_from(be, std::vector<float>(n, std::numeric_limits<float>::quiet_NaN()));
}
std::vector<float> act_to_host(Backend& be, const Buf& b, size_t n) {
  std::vector<float> v(n);
  be.synchronize();
  be.act_to_f32(v.data(), b.get(), n);
  return v;
}
std::vector<float> f32_to_host(Backend& be, const Buf& b, size_t n) {
  std::vector<float> v(n);
  be.synchronize();
  be.copy_to_host(v.data(), b.get(), n * 4);
  return v;
}

::testing::AssertionResult all_close(const std::vector<float>& got, const std::vector<double>& ref, double rtol,
                                     double atol_frac, const std::string& what) {
  if (got.size() != ref.size())
    return ::testing::AssertionFailure() << what << ": size " << got.size() << " vs reference " << ref.size();
  double mx = 0;
  for (double r : ref) mx = std::max(mx, std::fabs(r));
  const double atol = atol_frac * mx;
  double worst = 0;
  size_t worst_i = 0, bad = 0, first_bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(static_cast<double>(got[i]) - ref[i]);
    const double allow = rtol * std::fabs(ref[i]) + atol;
    const double ratio = std::isfinite(got[i]) ? err / (allow > 0 ? allow : 1e-30) : INFINITY;
    if (!(ratio <= 1.0)) {
      if (bad++ == 0) first_bad = i;
    }
    if (!(ratio <= worst)) {
      worst = ratio;
      worst_i = i;
    }
  }
  std::ostringstream os;
  os << what << ": n=" << got.size() << " worst err/allowance=" << worst << " at [" << worst_i << "] got "
     << got[worst_i] << " ref " << ref[worst_i];
  if (bad) {
    os << "; " << bad << " elements out of tolerance, first [" << first_bad << "] got " << got[first_bad] << " ref "
       << ref[first_bad] << " (rtol " << rtol << ", atol " << atol << ")";
    return ::testing::AssertionFailure() << os.str();
  }
  std::printf("  %s\n", os.str().c_str());
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult all_close(const std::vector<float>& got, const std::vector<float>& ref, double rtol,
                                     double atol_frac, const std::string& what) {
  return all_close(got, std::vector<double>(ref.begin(), ref.end()), rtol, atol_frac, what);
}

}  // namespace zt::test
