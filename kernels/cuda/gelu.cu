// GELU kernels: y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) and its derivative.
#include "kernels/cuda/bf16_util.cuh"
#include "base/cuda_check.h"
#include "kernels/cuda/gelu.cuh"

namespace zt::cuda {

constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2/pi)

__global__ void gelu_forward_kernel(bf16* out, const bf16* inp, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    float x = ld(inp, i);
    float u = kGeluScale * (x + 0.044715f * x * x * x);
    st(out, i, 0.5f * x * (1.0f + tanhf(u)));
  }
}

__device__ __forceinline__ float gelu_grad(float x) {
  float u = kGeluScale * (x + 0.044715f * x * x * x);
  float t = tanhf(u);
  float sech2 = 1.0f - t * t;
  return 0.5f * (1.0f + t) + 0.5f * x * sech2 * kGeluScale * (1.0f + 3.0f * 0.044715f * x * x);
}

__global__ void gelu_backward_kernel(bf16* dinp, const bf16* inp, const bf16* dout, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    st_add(dinp, i, gelu_grad(ld(inp, i)) * ld(dout, i));
}

__global__ void gelu_backward_from_f32_kernel(bf16* dpre, const float* dact, const bf16* pre, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    st(dpre, i, dact[i] * gelu_grad(ld(pre, i)));
}

void gelu_forward(void* out, const void* inp, size_t n, cudaStream_t s) {
  if (n == 0) return;
  gelu_forward_kernel<<<grid_for(n, 256), 256, 0, s>>>(static_cast<bf16*>(out), static_cast<const bf16*>(inp), n);
  ZT_LAUNCH_CHECK();
}

void gelu_backward(void* dinp, const void* inp, const void* dout, size_t n, cudaStream_t s) {
  if (n == 0) return;
  gelu_backward_kernel<<<grid_for(n, 256), 256, 0, s>>>(static_cast<bf16*>(dinp), static_cast<const bf16*>(inp),
                                                         static_cast<const bf16*>(dout), n);
  ZT_LAUNCH_CHECK();
}

void gelu_backward_from_f32(void* dpre, const float* dact, const void* pre, size_t n, cudaStream_t s) {
  if (n == 0) return;
  gelu_backward_from_f32_kernel<<<grid_for(n, 256), 256, 0, s>>>(static_cast<bf16*>(dpre), dact,
                                                                  static_cast<const bf16*>(pre), n);
  ZT_LAUNCH_CHECK();
}

}  // namespace zt::cuda
