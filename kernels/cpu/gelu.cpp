// CPU GELU, tanh approximation (GPT-2's), forward and accumulating backward: SIMD bodies (simd.h)
// over fixed blocks spread on OpenMP threads; exp-based, bitwise the same in every SIMD variant.
#include <algorithm>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/vec_math.h"

namespace zt::cpu {

namespace {

constexpr size_t kBlock = 4096;  // elements per task

ZT_SIMD_INLINE void gelu_fwd_body(float* out, const float* inp, size_t n) {
#pragma omp simd
  for (size_t i = 0; i < n; ++i) out[i] = vm::gelu(inp[i]);
}
ZT_SIMD_INLINE void gelu_bwd_body(float* dinp, const float* inp, const float* dout, size_t n) {
#pragma omp simd
  for (size_t i = 0; i < n; ++i) dinp[i] += vm::gelu_grad(inp[i]) * dout[i];
}
ZT_SIMD_INLINE void gelu_grad_mul_body(float* d, const float* pre, size_t n) {
#pragma omp simd
  for (size_t i = 0; i < n; ++i) d[i] = d[i] * vm::gelu_grad(pre[i]);
}
ZT_SIMD_DISPATCH(gelu_fwd, (float* out, const float* inp, size_t n), (out, inp, n))
ZT_SIMD_DISPATCH(gelu_bwd, (float* dinp, const float* inp, const float* dout, size_t n), (dinp, inp, dout, n))
ZT_SIMD_DISPATCH(gelu_grad_mul, (float* d, const float* pre, size_t n), (d, pre, n))

}  // namespace

void gelu_forward(float* out, const float* inp, size_t n) {
  const int64_t blocks = int64_t((n + kBlock - 1) / kBlock);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    const size_t i0 = size_t(b) * kBlock;
    gelu_fwd(out + i0, inp + i0, std::min(kBlock, n - i0));
  }
}

void gelu_backward(float* dinp, const float* inp, const float* dout, size_t n) {
  const int64_t blocks = int64_t((n + kBlock - 1) / kBlock);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    const size_t i0 = size_t(b) * kBlock;
    gelu_bwd(dinp + i0, inp + i0, dout + i0, std::min(kBlock, n - i0));
  }
}

void gelu_rows(float* out, const float* pre, size_t n) { gelu_fwd(out, pre, n); }
void gelu_grad_rows(float* d, const float* pre, size_t n) { gelu_grad_mul(d, pre, n); }

}  // namespace zt::cpu
