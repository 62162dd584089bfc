// The simple AdamW kernel (grid-stride over one fp32 span) and the host scalar precomputation.
#include <cmath>

#include "kernels/cuda/adamw_math.cuh"
#include "kernels/cuda/bf16_util.cuh"
#include "base/cuda_check.h"

namespace zt::cuda {

AdamWScalars adamw_scalars(const AdamWHyper& h) {
  AdamWScalars k{};
  k.lr = h.lr;
  k.beta1 = h.beta1;
  k.beta2 = h.beta2;
  k.eps = h.eps;
  k.weight_decay = h.weight_decay;
  k.grad_scale = h.grad_scale;
  k.decoupled = h.decoupled ? 1 : 0;
  if (h.bias_correction) {
    k.inv_bc1 = static_cast<float>(1.0 / (1.0 - std::pow(static_cast<double>(h.beta1), h.step)));
    k.inv_bc2 = static_cast<float>(1.0 / (1.0 - std::pow(static_cast<double>(h.beta2), h.step)));
  } else {
    k.inv_bc1 = k.inv_bc2 = 1.0f;
  }
  return k;
}

__global__ void adamw_kernel(float* p, const float* g, float* m, float* v, size_t n, AdamWScalars k) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    float pi = p[i], mi = m[i], vi = v[i];
    adamw_element(pi, mi, vi, g[i], k);
    p[i] = pi;
    m[i] = mi;
    v[i] = vi;
  }
}

void adamw_step(float* p, const float* g, float* m, float* v, size_t n, const AdamWHyper& h, cudaStream_t s) {
  if (n == 0) return;
  adamw_kernel<<<grid_for(n, 256), 256, 0, s>>>(p, g, m, v, n, adamw_scalars(h));
  ZT_LAUNCH_CHECK();
}

}  // namespace zt::cuda
