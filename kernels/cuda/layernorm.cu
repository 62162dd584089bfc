// LayerNorm kernels: one warp per row for the row statistics (also fused with the residual add
// before it) and the input gradient; dw, db are column sums through the deterministic column_reduce.
#include "kernels/cuda/column_reduce.cuh"
#include "kernels/cuda/layernorm.cuh"

namespace zt::cuda {

constexpr float kLnEps = 1e-5f;

__global__ void layernorm_forward_kernel(bf16* out, float* mean, float* rstd, const bf16* inp, const bf16* w,
                                         const bf16* b, int N, int C) {
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x & 31;
  if (row >= N) return;
  const bf16* x = inp + (size_t)row * C;
  float s = 0.0f;
  for (int c = lane; c < C; c += 32) s += ld(x, c);
  const float m = warp_sum(s) / C;
  float v = 0.0f;
  for (int c = lane; c < C; c += 32) {
    float d = ld(x, c) - m;
    v += d * d;
  }
  const float r = rsqrtf(warp_sum(v) / C + kLnEps);
  bf16* o = out + (size_t)row * C;
  for (int c = lane; c < C; c += 32) {
    float y = (ld(x, c) - m) * r * ld(w, c);
    if (b) y += ld(b, c);
    st(o, c, y);
  }
  if (lane == 0) {
    if (mean) mean[row] = m;
    if (rstd) rstd[row] = r;
  }
}

// resid = a + b (rounded to bf16, as residual_forward stores it), then LayerNorm of the rounded
// row: one warp per row, the sum taken while the row is written. resid may alias a or b.
__global__ void residual_layernorm_forward_kernel(bf16* resid, bf16* out, float* mean, float* rstd, const bf16* a,
                                                  const bf16* bb, const bf16* w, const bf16* b, int N, int C) {
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x & 31;
  if (row >= N) return;
  const size_t off = (size_t)row * C;
  bf16* r = resid + off;
  float s = 0.0f;
  for (int c = lane; c < C; c += 32) {
    const bf16 v = __float2bfloat16_rn(ld(a, off + c) + ld(bb, off + c));
    r[c] = v;
    s += __bfloat162float(v);
  }
  const float m = warp_sum(s) / C;
  float var = 0.0f;
  for (int c = lane; c < C; c += 32) {  // the lane reads back only what it wrote itself
    const float d = ld(r, c) - m;
    var += d * d;
  }
  const float rs = rsqrtf(warp_sum(var) / C + kLnEps);
  bf16* o = out + off;
  for (int c = lane; c < C; c += 32) {
    float y = (ld(r, c) - m) * rs * ld(w, c);
    if (b) y += ld(b, c);
    st(o, c, y);
  }
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = rs;
  }
}

__global__ void layernorm_backward_dinp_kernel(bf16* dinp, const bf16* dout, const bf16* inp, const bf16* w,
                                               const float* mean, const float* rstd, int N, int C) {
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x & 31;
  if (row >= N) return;
  const size_t off = (size_t)row * C;
  const float m = mean[row], r = rstd[row];
  float s1 = 0.0f, s2 = 0.0f;  // Σ dnorm, Σ dnorm·x̂
  for (int c = lane; c < C; c += 32) {
    float xh = (ld(inp, off + c) - m) * r;
    float dn = ld(dout, off + c) * ld(w, c);
    s1 += dn;
    s2 += dn * xh;
  }
  s1 = warp_sum(s1) / C;
  s2 = warp_sum(s2) / C;
  for (int c = lane; c < C; c += 32) {
    float xh = (ld(inp, off + c) - m) * r;
    float dn = ld(dout, off + c) * ld(w, c);
    st_add(dinp, off + c, r * (dn - s1 - xh * s2));
  }
}

struct LnParamGrad {
  const bf16* dout;
  const bf16* inp;
  const float* mean;
  const float* rstd;
  int C;
  __device__ void operator()(int r, int c, float* v) const {
    const size_t i = (size_t)r * C + c;
    const float d = ld(dout, i);
    v[0] = d * (ld(inp, i) - mean[r]) * rstd[r];
    v[1] = d;
  }
};

void layernorm_forward(void* out, float* mean, float* rstd, const void* inp, const void* w, const void* b, int N,
                       int C, cudaStream_t s) {
  if (N <= 0) return;
  layernorm_forward_kernel<<<(N + 7) / 8, 256, 0, s>>>(static_cast<bf16*>(out), mean, rstd,
                                                       static_cast<const bf16*>(inp), static_cast<const bf16*>(w),
                                                       static_cast<const bf16*>(b), N, C);
  ZT_LAUNCH_CHECK();
}

void residual_layernorm_forward(void* resid, void* out, float* mean, float* rstd, const void* a, const void* b,
                                const void* w, const void* bias, int N, int C, cudaStream_t s) {
  if (N <= 0) return;
  residual_layernorm_forward_kernel<<<(N + 7) / 8, 256, 0, s>>>(
      static_cast<bf16*>(resid), static_cast<bf16*>(out), mean, rstd, static_cast<const bf16*>(a),
      static_cast<const bf16*>(b), static_cast<const bf16*>(w), static_cast<const bf16*>(bias), N, C);
  ZT_LAUNCH_CHECK();
}

size_t layernorm_backward_scratch_floats(int N, int C) { return 2 * column_reduce_scratch_floats(N, C); }

void layernorm_backward(void* dinp, void* dw, void* db, const void* dout, const void* inp, const void* w,
                        const float* mean, const float* rstd, int N, int C, float* scratch, cudaStream_t s) {
  if (N <= 0) return;
  const auto* d = static_cast<const bf16*>(dout);
  const auto* x = static_cast<const bf16*>(inp);
  if (dinp) {
    layernorm_backward_dinp_kernel<<<(N + 7) / 8, 256, 0, s>>>(static_cast<bf16*>(dinp), d, x,
                                                               static_cast<const bf16*>(w), mean, rstd, N, C);
    ZT_LAUNCH_CHECK();
  }
  if (dw || db)
    column_reduce<2>(static_cast<bf16*>(dw), static_cast<bf16*>(db), scratch, N, C, LnParamGrad{d, x, mean, rstd, C},
                     s);
}

}  // namespace zt::cuda
