// SwiGLU kernels: one thread per output element (n, f); gate at column f and up at F + f of row n
// of gate_up [N, 2F]; sigmoid in fp32 with expf.
#include "base/cuda_check.h"
#include "kernels/cuda/bf16_util.cuh"
#include "kernels/cuda/swiglu.cuh"

namespace zt::cuda {

__device__ __forceinline__ float sigmoidf(float g) { return 1.0f / (1.0f + expf(-g)); }

__global__ void swiglu_forward_kernel(bf16* out, const bf16* gu, int F, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const size_t row = i / F, f = i % F;
    const float g = ld(gu, row * 2 * F + f), u = ld(gu, row * 2 * F + F + f);
    st(out, i, (g * sigmoidf(g)) * u);
  }
}

__global__ void swiglu_backward_kernel(bf16* dgu, const bf16* dout, const bf16* gu, int F, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const size_t row = i / F, f = i % F;
    const size_t gi = row * 2 * F + f, ui = gi + F;
    const float g = ld(gu, gi), u = ld(gu, ui), d = ld(dout, i);
    const float s = sigmoidf(g);
    st_add(dgu, gi, d * u * (s * (1.0f + g * (1.0f - s))));
    st_add(dgu, ui, d * (g * s));
  }
}

void swiglu_forward(void* out, const void* gate_up, int N, int F, cudaStream_t s) {
  const size_t n = (size_t)N * F;
  if (n == 0) return;
  swiglu_forward_kernel<<<grid_for(n, 256), 256, 0, s>>>(static_cast<bf16*>(out), static_cast<const bf16*>(gate_up),
                                                         F, n);
  ZT_LAUNCH_CHECK();
}

void swiglu_backward(void* dgate_up, const void* dout, const void* gate_up, int N, int F, cudaStream_t s) {
  const size_t n = (size_t)N * F;
  if (n == 0) return;
  swiglu_backward_kernel<<<grid_for(n, 256), 256, 0, s>>>(static_cast<bf16*>(dgate_up), static_cast<const bf16*>(dout),
                                                          static_cast<const bf16*>(gate_up), F, n);
  ZT_LAUNCH_CHECK();
}

}  // namespace zt::cuda
