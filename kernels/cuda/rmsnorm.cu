// RMSNorm kernels: one warp per row for the statistics (also fused with the residual add before it)
// and the input gradient (fp32 sums); dw is a column sum through the deterministic column_reduce.
#include "kernels/cuda/column_reduce.cuh"
#include "kernels/cuda/rmsnorm.cuh"

namespace zt::cuda {

__global__ void rmsnorm_forward_kernel(bf16* out, float* rstd, const bf16* inp, const bf16* w, int N, int C,
                                       float eps) {
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x & 31;
  if (row >= N) return;
  const bf16* x = inp + (size_t)row * C;
  float ss = 0.0f;
  for (int c = lane; c < C; c += 32) {
    const float v = ld(x, c);
    ss += v * v;
  }
  const float r = rsqrtf(warp_sum(ss) / C + eps);
  bf16* o = out + (size_t)row * C;
  for (int c = lane; c < C; c += 32) st(o, c, ld(w, c) * (ld(x, c) * r));
  if (lane == 0 && rstd) rstd[row] = r;
}

// One warp per row; the lane reads back only the residual elements it wrote itself.
__global__ void residual_rmsnorm_forward_kernel(bf16* resid, bf16* out, float* rstd, const bf16* a, const bf16* bb,
                                                const bf16* w, int N, int C, float eps) {
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x & 31;
  if (row >= N) return;
  const size_t off = (size_t)row * C;
  bf16* r = resid + off;
  float ss = 0.0f;
  for (int c = lane; c < C; c += 32) {
    const bf16 v = __float2bfloat16_rn(ld(a, off + c) + ld(bb, off + c));
    r[c] = v;
    const float f = __bfloat162float(v);
    ss += f * f;
  }
  const float rs = rsqrtf(warp_sum(ss) / C + eps);
  bf16* o = out + off;
  for (int c = lane; c < C; c += 32) st(o, c, ld(w, c) * (ld(r, c) * rs));
  if (lane == 0 && rstd) rstd[row] = rs;
}

__global__ void rmsnorm_backward_dinp_kernel(bf16* dinp, const bf16* dout, const bf16* inp, const bf16* w,
                                             const float* rstd, int N, int C) {
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x & 31;
  if (row >= N) return;
  const size_t off = (size_t)row * C;
  const float r = rstd[row];
  float dot = 0.0f;  // Σ (w∘g)·x̂
  for (int c = lane; c < C; c += 32) dot += ld(dout, off + c) * ld(w, c) * (ld(inp, off + c) * r);
  dot = warp_sum(dot) / C;
  for (int c = lane; c < C; c += 32) {
    const float dn = ld(dout, off + c) * ld(w, c);
    st_add(dinp, off + c, r * (dn - ld(inp, off + c) * r * dot));
  }
}

struct RmsParamGrad {
  const bf16* dout;
  const bf16* inp;
  const float* rstd;
  int C;
  __device__ void operator()(int r, int c, float* v) const {
    const size_t i = (size_t)r * C + c;
    v[0] = ld(dout, i) * (ld(inp, i) * rstd[r]);
  }
};

void rmsnorm_forward(void* out, float* rstd, const void* inp, const void* w, int N, int C, float eps, cudaStream_t s) {
  if (N <= 0) return;
  rmsnorm_forward_kernel<<<(N + 7) / 8, 256, 0, s>>>(static_cast<bf16*>(out), rstd, static_cast<const bf16*>(inp),
                                                     static_cast<const bf16*>(w), N, C, eps);
  ZT_LAUNCH_CHECK();
}

void residual_rmsnorm_forward(void* resid, void* out, float* rstd, const void* a, const void* b, const void* w, int N,
                              int C, float eps, cudaStream_t s) {
  if (N <= 0) return;
  residual_rmsnorm_forward_kernel<<<(N + 7) / 8, 256, 0, s>>>(
      static_cast<bf16*>(resid), static_cast<bf16*>(out), rstd, static_cast<const bf16*>(a),
      static_cast<const bf16*>(b), static_cast<const bf16*>(w), N, C, eps);
  ZT_LAUNCH_CHECK();
}

size_t rmsnorm_backward_scratch_floats(int N, int C) { return column_reduce_scratch_floats(N, C); }

void rmsnorm_backward(void* dinp, void* dw, const void* dout, const void* inp, const void* w, const float* rstd, int N,
                      int C, float* scratch, cudaStream_t s) {
  if (N <= 0) return;
  const auto* d = static_cast<const bf16*>(dout);
  const auto* x = static_cast<const bf16*>(inp);
  if (dinp) {
    rmsnorm_backward_dinp_kernel<<<(N + 7) / 8, 256, 0, s>>>(static_cast<bf16*>(dinp), d, x,
                                                             static_cast<const bf16*>(w), rstd, N, C);
    ZT_LAUNCH_CHECK();
  }
  if (dw) column_reduce<1>(static_cast<bf16*>(dw), nullptr, scratch, N, C, RmsParamGrad{d, x, rstd, C}, s);
}

}  // namespace zt::cuda
