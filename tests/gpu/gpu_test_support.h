// Helpers for the GPU tests: device detection (skip without a GPU), host bf16 rounding, random
// inputs, buffers on either backend (poisoned with NaN), and a tolerance comparison with a report.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/backend.h"

namespace zt::test {

// Whether a CUDA device is usable: None when there is no device or no NVIDIA driver at all,
// Broken for any other cudaGetDeviceCount error (a GPU machine whose runtime fails); *why says
// what cudaGetDeviceCount returned.
enum class GpuProbe { Usable, None, Broken };
GpuProbe probe_gpu(std::string* why);

// Host round-to-nearest-even fp32 -> bf16 -> fp32 (the reference for the device conversion).
uint16_t bf16_bits_rne(float x);
float bf16_to_float(uint16_t b);
inline float bf16_round(float x) { return bf16_to_float(bf16_bits_rne(x)); }

// n uniform values in [lo, hi), rounded to bf16 so both backends see identical inputs; never 0.
std::vector<float> random_bf16(size_t n, std::mt19937& rng, float lo = -1.f, float hi = 1.f);

// A buffer from Backend::alloc, freed on destruction.
class Buf {
 public:
  Buf(Backend& be, size_t bytes) : be_(&be), p_(be.alloc(bytes)), bytes_(bytes) {}
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
  ~Buf() { be_->free(p_); }
  void* get() const { return p_; }
  float* f32() const { return static_cast<float*>(p_); }
  int32_t* i32() const { return static_cast<int32_t*>(p_); }

 private:
  Backend* be_;
  void* p_;
  size_t bytes_;
};

std::unique_ptr<Buf> act_from(Backend& be, const std::vector<float>& v);      // act_dtype buffer
std::unique_ptr<Buf> f32_from(Backend& be, const std::vector<float>& v);      // F32 buffer
std::unique_ptr<Buf> i32_from(Backend& be, const std::vector<int32_t>& v);
std::unique_ptr<Buf> act_poisoned(Backend& be, size_t n);                     // all NaN
std::unique_ptr<Buf> f32_poisoned(Backend& be, size_t n);
std::vector<float> act_to_host(Backend& be, const Buf& b, size_t n);
std::vector<float> f32_to_host(Backend& be, const Buf& b, size_t n);

// |got − ref| ≤ rtol·|ref| + atol_frac·max|ref| for every element, all finite. The message
// names the first failing index and the worst error relative to the allowance.
::testing::AssertionResult all_close(const std::vector<float>& got, const std::vector<double>& ref, double rtol,
                                     double atol_frac, const std::string& what);
::testing::AssertionResult all_close(const std::vector<float>& got, const std::vector<float>& ref, double rtol,
                                     double atol_frac, const std::string& what);

}  // namespace zt::test
