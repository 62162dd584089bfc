// The simple AdamW kernel (grid-stride over one fp32 span) and the host scalar precomputation.
#include <cmath>

#include "kernels/cuda/adamw_math.cuh"
#include "kernels/cuda/bf16_util.cuh"
#include "base/cuda_check.h"

namespace zt::cuda {

__global__ void adamw_kernel(float* p, const float* g, float* m, float* v, size_t n, AdamScalars k) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    float pi = p[i], mi = m[i], vi = v[i];
    adam_update_element(pi, g[i], mi, vi, k);
    p[i] = pi;
    m[i] = mi;
    v[i] = vi;
  }
}

void adamw_step(float* p, const float* g, float* m, float* v, size_t n, const AdamWHyper& h, cudaStream_t s) {
  if (n == 0) return;
  adamw_kernel<<<grid_for(n, 256), 256, 0, s>>>(p, g, m, v, n, adam_scalars(h));
  ZT_LAUNCH_CHECK();
}

}  // namespace zt::cuda
