// Reference attention kernels, grouped-query (NKV key/value heads; query head h reads key/value head
// h / (NH / NKV); rows of qkv W = (NH + 2·NKV)·hs wide: q, k, v). Forward: one block per (query
// row, query head, batch): scores, causal softmax in fp32, P·V. Backward: one block per query row
// (dP, dS, dq) then one per (key row, key/value head) (dk, dv summed over the head's query heads),
// each a fixed-order loop — no atomics, so results are bitwise reproducible run to run.
#include <cmath>

#include "kernels/cuda/attention.cuh"
#include "kernels/cuda/bf16_util.cuh"
#include "base/cuda_check.h"

namespace zt::cuda {

namespace {

constexpr int kAttnThreads = 128;

// Dynamic shared: row[T] then vec[hs] then red[32].
// Where one sequence's heads start in qkv rows of W values: q of query head h, k and v of its
// key/value head.
struct HeadColumns {
  size_t W, q, k, v;
  __device__ HeadColumns(int C, int NH, int NKV, int h) {
    const int hs = C / NH, g = h / (NH / NKV);
    W = (size_t)(NH + 2 * NKV) * hs;
    q = (size_t)h * hs;
    k = (size_t)C + (size_t)g * hs;
    v = (size_t)C + (size_t)(NKV + g) * hs;
  }
};

__global__ void attention_forward_kernel(bf16* out, float* probs, const bf16* qkv, int T, int C, int NH, int NKV) {
  extern __shared__ float sh[];
  const int t1 = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int hs = C / NH;
  float* row = sh;
  float* q = sh + T;
  float* red = q + hs;
  const HeadColumns col(C, NH, NKV, h);
  const size_t W = col.W;
  const bf16* seq = qkv + (size_t)b * T * W;
  const float scale = rsqrtf(static_cast<float>(hs));
  for (int d = threadIdx.x; d < hs; d += blockDim.x) q[d] = ld(seq, (size_t)t1 * W + col.q + d);
  __syncthreads();
  float mx = -INFINITY;
  for (int t2 = threadIdx.x; t2 <= t1; t2 += blockDim.x) {
    const bf16* k = seq + (size_t)t2 * W + col.k;
    float dot = 0.0f;
    for (int d = 0; d < hs; ++d) dot += q[d] * ld(k, d);
    dot *= scale;
    row[t2] = dot;
    mx = fmaxf(mx, dot);
  }
  mx = block_max(mx, red);
  float sum = 0.0f;
  for (int t2 = threadIdx.x; t2 <= t1; t2 += blockDim.x) {
    float e = __expf(row[t2] - mx);
    row[t2] = e;
    sum += e;
  }
  sum = block_sum(sum, red);
  const float inv = 1.0f / sum;
  float* prow = probs + (((size_t)b * NH + h) * T + t1) * T;
  for (int t2 = threadIdx.x; t2 < T; t2 += blockDim.x) {
    float p = t2 <= t1 ? row[t2] * inv : 0.0f;
    if (t2 <= t1) row[t2] = p;
    prow[t2] = p;
  }
  __syncthreads();
  bf16* o = out + ((size_t)b * T + t1) * C + (size_t)h * hs;
  for (int d = threadIdx.x; d < hs; d += blockDim.x) {
    float acc = 0.0f;
    for (int t2 = 0; t2 <= t1; ++t2) acc += row[t2] * ld(seq, (size_t)t2 * W + col.v + d);
    st(o, d, acc);
  }
}

// Per query row t1: dP = dout·vᵀ, dS = P ⊙ (dP − Σ P·dP), dq += scale · dS·k. Writes dS rows.
__global__ void attention_backward_q_kernel(bf16* dqkv, float* dS, const bf16* dout, const bf16* qkv,
                                            const float* probs, int T, int C, int NH, int NKV) {
  extern __shared__ float sh[];
  const int t1 = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int hs = C / NH;
  float* row = sh;
  float* dov = sh + T;
  float* red = dov + hs;
  const HeadColumns col(C, NH, NKV, h);
  const size_t W = col.W;
  const bf16* seq = qkv + (size_t)b * T * W;
  const float scale = rsqrtf(static_cast<float>(hs));
  const bf16* drow = dout + ((size_t)b * T + t1) * C + (size_t)h * hs;
  for (int d = threadIdx.x; d < hs; d += blockDim.x) dov[d] = ld(drow, d);
  __syncthreads();
  const size_t prow_off = (((size_t)b * NH + h) * T + t1) * T;
  const float* prow = probs + prow_off;
  float s = 0.0f;
  for (int t2 = threadIdx.x; t2 <= t1; t2 += blockDim.x) {
    const bf16* v = seq + (size_t)t2 * W + col.v;
    float dp = 0.0f;
    for (int d = 0; d < hs; ++d) dp += dov[d] * ld(v, d);
    row[t2] = dp;
    s += dp * prow[t2];
  }
  s = block_sum(s, red);
  for (int t2 = threadIdx.x; t2 < T; t2 += blockDim.x) {
    float ds = t2 <= t1 ? prow[t2] * (row[t2] - s) : 0.0f;
    if (t2 <= t1) row[t2] = ds;
    dS[prow_off + t2] = ds;
  }
  __syncthreads();
  bf16* dq = dqkv + ((size_t)b * T + t1) * W + col.q;
  for (int d = threadIdx.x; d < hs; d += blockDim.x) {
    float acc = 0.0f;
    for (int t2 = 0; t2 <= t1; ++t2) acc += row[t2] * ld(seq, (size_t)t2 * W + col.k + d);
    st_add(dq, d, scale * acc);
  }
}

// Per key row t2 and key/value head g, over its query heads h (ascending) and t1 ≥ t2:
// dk += scale · Σ dS_h[t1,t2] q_h[t1]; dv += Σ P_h[t1,t2] dout_h[t1].
__global__ void attention_backward_kv_kernel(bf16* dqkv, const float* dS, const bf16* dout, const bf16* qkv,
                                             const float* probs, int T, int C, int NH, int NKV) {
  const int t2 = blockIdx.x, g = blockIdx.y, b = blockIdx.z;
  const int hs = C / NH, group = NH / NKV;
  const HeadColumns first(C, NH, NKV, g * group);  // k and v columns are the group's
  const size_t W = first.W;
  const bf16* seq = qkv + (size_t)b * T * W;
  const float scale = rsqrtf(static_cast<float>(hs));
  bf16* dk = dqkv + ((size_t)b * T + t2) * W + first.k;
  bf16* dv = dqkv + ((size_t)b * T + t2) * W + first.v;
  for (int d = threadIdx.x; d < hs; d += blockDim.x) {
    float ak = 0.0f, av = 0.0f;
    for (int h = g * group; h < (g + 1) * group; ++h) {
      const size_t mat = ((size_t)b * NH + h) * T * T;
      const bf16* q = seq + (size_t)h * hs;
      const bf16* dbase = dout + (size_t)b * T * C + (size_t)h * hs;
      for (int t1 = t2; t1 < T; ++t1) {
        const size_t pi = mat + (size_t)t1 * T + t2;
        ak += dS[pi] * ld(q, (size_t)t1 * W + d);
        av += probs[pi] * ld(dbase, (size_t)t1 * C + d);
      }
    }
    st_add(dk, d, scale * ak);
    st_add(dv, d, av);
  }
}

size_t shared_bytes(int T, int hs) { return ((size_t)T + hs + 32) * sizeof(float); }

template <class K>
void allow_shared(K kernel, size_t bytes) {
  if (bytes > 48 * 1024)
    ZT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}

}  // namespace

size_t naive_attention_saved_bytes(int B, int T, int C, int NH) { return (size_t)B * NH * T * T * sizeof(float); }
size_t naive_attention_backward_scratch_floats(int B, int T, int NH) { return (size_t)B * NH * T * T; }

void naive_attention_forward(void* out, float* probs, const void* qkv, int B, int T, int C, int NH, int NKV,
                             cudaStream_t s) {
  if ((size_t)B * T * C == 0) return;
  const size_t shm = shared_bytes(T, C / NH);
  allow_shared(attention_forward_kernel, shm);
  attention_forward_kernel<<<dim3(T, NH, B), kAttnThreads, shm, s>>>(static_cast<bf16*>(out), probs,
                                                                     static_cast<const bf16*>(qkv), T, C, NH, NKV);
  ZT_LAUNCH_CHECK();
}

void naive_attention_backward(void* dqkv, const void* dout, const void* qkv, const float* probs, int B, int T, int C,
                              int NH, int NKV, float* scratch, cudaStream_t s) {
  if ((size_t)B * T * C == 0) return;
  const size_t shm = shared_bytes(T, C / NH);
  allow_shared(attention_backward_q_kernel, shm);
  auto* dx = static_cast<bf16*>(dqkv);
  const auto* d = static_cast<const bf16*>(dout);
  const auto* x = static_cast<const bf16*>(qkv);
  attention_backward_q_kernel<<<dim3(T, NH, B), kAttnThreads, shm, s>>>(dx, scratch, d, x, probs, T, C, NH, NKV);
  ZT_LAUNCH_CHECK();
  attention_backward_kv_kernel<<<dim3(T, NKV, B), 64, 0, s>>>(dx, scratch, d, x, probs, T, C, NH, NKV);
  ZT_LAUNCH_CHECK();
}

}  // namespace zt::cuda
