// Elementwise add kernels for the residual stream (fp32 sum, one bf16 rounding).
#include "kernels/cuda/bf16_util.cuh"
#include "base/cuda_check.h"
#include "kernels/cuda/residual.cuh"

namespace zt::cuda {

// No __restrict__: out may alias a or b (each element is read before it is written by the same thread).
__global__ void residual_kernel(bf16* out, const bf16* a, const bf16* b, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    st(out, i, ld(a, i) + ld(b, i));
}

void residual_forward(void* out, const void* a, const void* b, size_t n, cudaStream_t s) {
  if (n == 0) return;
  residual_kernel<<<grid_for(n, 256), 256, 0, s>>>(static_cast<bf16*>(out), static_cast<const bf16*>(a),
                                                    static_cast<const bf16*>(b), n);
  ZT_LAUNCH_CHECK();
}

void accumulate(void* acc, const void* x, size_t n, cudaStream_t s) {
  residual_forward(acc, acc, x, n, s);
}

}  // namespace zt::cuda
