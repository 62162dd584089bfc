// The CUDA backend's attention (flash kernels) against the CPU backend (fp32) and against the
// reference CUDA kernels, forward and backward, on fresh random inputs with NaN-poisoned outputs:
// T = 1, odd T, T past one tile by one row, T = 1024, head sizes 16/32/64/128, B·NH = 512.
//
// Tolerance. Both backends get identical bf16-representable inputs. The flash kernels round P (and
// dS in backward) to bf16 as tensor-core operands (one rounding per term, at most the unit roundoff
// u = 2⁻⁸ relative), accumulate in fp32, and round each output once; dq and dk come out of sums
// that cancel (Σ dS = 0 per row). Norm-wise we allow ‖got − ref‖₂/‖ref‖₂ ≤ 1e-2 (bf16-operand
// territory); element-wise |got − ref| ≤ |ref|/128 + max|ref|/64, i.e. two roundings (the operand's
// and the output's, 2u) plus a floor of 4u·max|ref| for the cancellation, tight enough that one
// wrong row of a T = 1024 tensor fails (its errors are of the order of max|ref|, where the norm
// alone would pass it).
// At T = 1 each query sees one key: P = 1 and dS = P∘(dP − rowsum(dO∘O)) = 0, so dq and dk are
// exactly 0 and both backends return only fp32 cancellation noise (no rounding to compare against).
// There they are checked against an absolute bound instead: |dq|, |dk| ≤ 4u·max|dv| (noise is
// ~head_size·2⁻²⁴ of the summed terms; a real error is of the order of max|dv|).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <stdexcept>

#include "kernels/cuda/attention.cuh"
#include "kernels/cuda/flash_attention.cuh"
#include "tests/gpu/gpu_test_support.h"

namespace zt::test {
namespace {

constexpr double kRel = 1.0 / 128, kAtolFrac = 1.0 / 64, kNormTol = 1e-2;  // 2 roundings + 4u floor
constexpr double kZeroFrac = 1.0 / 64;  // T = 1: |dq|, |dk| ≤ 4u·max|dv|

struct Shape {
  int B, T, C, NH;
  std::string tag() const {
    return "B=" + std::to_string(B) + " T=" + std::to_string(T) + " C=" + std::to_string(C) + " NH=" +
           std::to_string(NH) + " hs=" + std::to_string(C / NH);
  }
};

::testing::AssertionResult norm_close(const std::vector<float>& got, const std::vector<float>& ref, double tol,
                                      const std::string& what) {
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return ::testing::AssertionFailure() << what << ": non-finite at [" << i << "]";
    num += (double(got[i]) - ref[i]) * (double(got[i]) - ref[i]);
    den += double(ref[i]) * ref[i];
  }
  const double rel = std::sqrt(num / (den > 0 ? den : 1e-300));
  if (rel > tol) return ::testing::AssertionFailure() << what << ": relative L2 error " << rel << " > " << tol;
  std::printf("  %s: relative L2 error %.3e\n", what.c_str(), rel);
  return ::testing::AssertionSuccess();
}

// Both criteria, on the q, k and v thirds of a [B,T,3C] gradient separately (their scales differ).
void expect_close(const std::vector<float>& got, const std::vector<float>& ref, const Shape& s, bool is_dqkv,
                  const std::string& what) {
  if (!is_dqkv) {
    EXPECT_TRUE(norm_close(got, ref, kNormTol, what));
    EXPECT_TRUE(all_close(got, ref, kRel, kAtolFrac, what));
    return;
  }
  const char* part[] = {"dq", "dk", "dv"};
  std::vector<float> g[3], r[3];
  for (int p = 0; p < 3; ++p)
    for (size_t row = 0; row < size_t(s.B) * s.T; ++row)
      for (int c = 0; c < s.C; ++c) {
        g[p].push_back(got[row * 3 * s.C + p * s.C + c]);
        r[p].push_back(ref[row * 3 * s.C + p * s.C + c]);
      }
  for (int p = 0; p < 3; ++p) {
    if (s.T == 1 && p < 2) {  // exactly zero in exact arithmetic: an absolute bound (header)
      double dv_max = 0;
      for (float v : r[2]) dv_max = std::max(dv_max, std::fabs(double(v)));
      size_t bad = 0, first = 0;
      for (size_t i = 0; i < g[p].size(); ++i)
        if (!(std::fabs(double(g[p][i])) <= kZeroFrac * dv_max) && bad++ == 0) first = i;  // NaN fails too
      EXPECT_EQ(bad, 0u) << what << " " << part[p] << " at T = 1: " << bad << " elements above "
                         << kZeroFrac * dv_max << ", first [" << first << "] = " << (bad ? g[p][first] : 0.f);
      continue;
    }
    EXPECT_TRUE(norm_close(g[p], r[p], kNormTol, what + " " + part[p]));
    EXPECT_TRUE(all_close(g[p], r[p], kRel, kAtolFrac, what + " " + part[p]));
  }
}

struct Result {
  std::vector<float> out, dqkv, dqkv2;  // dqkv2: after a second backward into the same buffer
};

// Forward, then backward twice into one zeroed gradient buffer (the second pass checks +=).
Result run_backend(Backend& be, const Shape& s, const std::vector<float>& qkv, const std::vector<float>& dout) {
  const size_t n_out = size_t(s.B) * s.T * s.C, n_qkv = 3 * n_out;
  auto X = act_from(be, qkv), D = act_from(be, dout);
  auto Y = act_poisoned(be, n_out);
  const size_t sb = be.attention_saved_bytes(s.B, s.T, s.C, s.NH);
  Buf saved(be, sb);
  std::vector<unsigned char> ff(sb, 0xFF);  // NaN in fp32 and bf16: backward must read only what forward wrote
  be.copy_to_device(saved.get(), ff.data(), sb);
  auto DX = act_poisoned(be, n_qkv);
  be.zero(DX->get(), n_qkv * dtype_size(be.act_dtype()));
  be.attention_forward(Y->get(), saved.get(), X->get(), s.B, s.T, s.C, s.NH);
  be.attention_backward(DX->get(), D->get(), X->get(), saved.get(), s.B, s.T, s.C, s.NH);
  Result r;
  r.out = act_to_host(be, *Y, n_out);
  r.dqkv = act_to_host(be, *DX, n_qkv);
  be.attention_backward(DX->get(), D->get(), X->get(), saved.get(), s.B, s.T, s.C, s.NH);
  r.dqkv2 = act_to_host(be, *DX, n_qkv);
  return r;
}

class GpuAttention : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("ZT_CUDA_ATTENTION");
    gpu = make_cuda_backend(0);
    cpu = make_cpu_backend();
  }
  std::unique_ptr<Backend> gpu, cpu;
  std::mt19937 rng{20261130};
};

const Shape kShapes[] = {
    {2, 1, 48, 3},      // T = 1: one key per query
    {2, 7, 48, 3},      // odd T inside one tile, head size 16
    {3, 77, 256, 4},    // odd T over two tiles, head size 64
    {2, 129, 128, 4},   // three tiles, the last holding one row; head size 32
    {1, 200, 256, 2},   // head size 128
    {1, 1024, 768, 12}, // GPT-2 124M's attention at full context
    {32, 65, 1024, 16}, // B·NH = 512 (head, batch grid), 65 = one tile + 1
};

TEST_F(GpuAttention, FlashMatchesCpuBackendForwardAndBackward) {
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(s.tag());
    ASSERT_TRUE(cuda::flash_attention_supports(s.C / s.NH));
    const size_t n_out = size_t(s.B) * s.T * s.C;
    auto qkv = random_bf16(3 * n_out, rng, -2, 2), dout = random_bf16(n_out, rng, -1, 1);
    const Result g = run_backend(*gpu, s, qkv, dout);
    const Result c = run_backend(*cpu, s, qkv, dout);
    expect_close(g.out, c.out, s, false, "out vs cpu " + s.tag());
    expect_close(g.dqkv, c.dqkv, s, true, "dqkv vs cpu " + s.tag());
    expect_close(g.dqkv2, c.dqkv2, s, true, "dqkv after two backward passes vs cpu " + s.tag());
    // Saved state is O(T): the row statistics and a bf16 copy of the output, no T x T matrix.
    EXPECT_EQ(gpu->attention_saved_bytes(s.B, s.T, s.C, s.NH), cuda::flash_attention_saved_bytes(s.B, s.T, s.C, s.NH));
    EXPECT_LE(cuda::flash_attention_saved_bytes(s.B, s.T, s.C, s.NH),
              size_t(s.B) * s.NH * s.T * 4 + 256 + n_out * 2);
  }
}

TEST_F(GpuAttention, FlashMatchesReferenceKernels) {
  cudaStream_t st = static_cast<cudaStream_t>(gpu->native_stream());
  for (const Shape& s : {Shape{2, 7, 48, 3}, Shape{3, 77, 256, 4}, Shape{1, 513, 768, 12}}) {
    SCOPED_TRACE(s.tag());
    const size_t n_out = size_t(s.B) * s.T * s.C, n_qkv = 3 * n_out;
    auto qkv = random_bf16(n_qkv, rng, -2, 2), dout = random_bf16(n_out, rng, -1, 1);
    const Result f = run_backend(*gpu, s, qkv, dout);
    auto X = act_from(*gpu, qkv), D = act_from(*gpu, dout);
    auto Y = act_poisoned(*gpu, n_out), DX = act_poisoned(*gpu, n_qkv);
    gpu->zero(DX->get(), n_qkv * 2);
    Buf probs(*gpu, cuda::naive_attention_saved_bytes(s.B, s.T, s.C, s.NH));
    Buf scratch(*gpu, cuda::naive_attention_backward_scratch_floats(s.B, s.T, s.NH) * 4);
    cuda::naive_attention_forward(Y->get(), probs.f32(), X->get(), s.B, s.T, s.C, s.NH, s.NH, st);
    cuda::naive_attention_backward(DX->get(), D->get(), X->get(), probs.f32(), s.B, s.T, s.C, s.NH, s.NH,
                                   scratch.f32(), st);
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    expect_close(f.out, act_to_host(*gpu, *Y, n_out), s, false, "flash out vs reference kernels " + s.tag());
    expect_close(f.dqkv, act_to_host(*gpu, *DX, n_qkv), s, true, "flash dqkv vs reference kernels " + s.tag());
  }
}

TEST_F(GpuAttention, FlashIsBitwiseReproducible) {
  const Shape s{4, 300, 768, 12};
  const size_t n_out = size_t(s.B) * s.T * s.C;
  auto qkv = random_bf16(3 * n_out, rng, -2, 2), dout = random_bf16(n_out, rng, -1, 1);
  const Result a = run_backend(*gpu, s, qkv, dout), b = run_backend(*gpu, s, qkv, dout);
  EXPECT_TRUE(all_close(a.out, b.out, 0, 0, "out, run 1 vs run 2"));
  EXPECT_TRUE(all_close(a.dqkv, b.dqkv, 0, 0, "dqkv, run 1 vs run 2"));
}

TEST_F(GpuAttention, FlashRefusesUnsupportedHeadSizeAndMisalignedBuffers) {
  cudaStream_t st = static_cast<cudaStream_t>(gpu->native_stream());
  Buf a(*gpu, 1 << 20), b(*gpu, 1 << 20), c(*gpu, 1 << 20);
  EXPECT_THROW(cuda::flash_attention_forward(a.get(), b.get(), c.get(), 1, 8, 72, 3, 3, st), std::invalid_argument);
  EXPECT_THROW(cuda::flash_attention_forward(a.get(), b.get(), static_cast<char*>(c.get()) + 2, 1, 8, 64, 1, 1, st),
               std::invalid_argument);
}

TEST_F(GpuAttention, HeadSizesWithoutFlashKernelsUseTheReference) {
  // hs = 24: not a flash size; the backend falls back to the T x T reference and stays correct.
  const Shape s{2, 33, 72, 3};
  EXPECT_EQ(gpu->attention_saved_bytes(s.B, s.T, s.C, s.NH), cuda::naive_attention_saved_bytes(s.B, s.T, s.C, s.NH));
  const size_t n_out = size_t(s.B) * s.T * s.C;
  auto qkv = random_bf16(3 * n_out, rng, -2, 2), dout = random_bf16(n_out, rng, -1, 1);
  const Result g = run_backend(*gpu, s, qkv, dout), c = run_backend(*cpu, s, qkv, dout);
  expect_close(g.out, c.out, s, false, "reference out vs cpu " + s.tag());
  expect_close(g.dqkv, c.dqkv, s, true, "reference dqkv vs cpu " + s.tag());
}

TEST_F(GpuAttention, EnvironmentSelectsTheReferenceKernels) {
  setenv("ZT_CUDA_ATTENTION", "naive", 1);
  auto naive = make_cuda_backend(0);
  EXPECT_EQ(naive->attention_saved_bytes(2, 64, 768, 12), cuda::naive_attention_saved_bytes(2, 64, 768, 12));
  setenv("ZT_CUDA_ATTENTION", "fast", 1);
  EXPECT_THROW(make_cuda_backend(0), std::runtime_error);
  unsetenv("ZT_CUDA_ATTENTION");
}

}  // namespace
}  // namespace zt::test
