// One block per (query head, sequence): scores of the last query against the t cached keys of its
// key/value head (h / (NH / NKV)), the softmax in fp32, then the weighted sum of the cached values —
// the reference forward's row t - 1, with no T×T work. Shared memory: scores[t], q[hs], the
// reduction scratch[32].
#include <cmath>
#include <stdexcept>
#include <string>

#include "base/cuda_check.h"
#include "kernels/cuda/attention_decode.cuh"
#include "kernels/cuda/bf16_util.cuh"

namespace zt::cuda {

namespace {

constexpr int kDecodeThreads = 128;

__global__ void attention_decode_kernel(bf16* out, const bf16* cache, int Tmax, int t, int C, int NH, int NKV) {
  extern __shared__ float shared[];
  const int h = blockIdx.x, b = blockIdx.y;
  const int hs = C / NH, kvh = h / (NH / NKV);
  float* scores = shared;
  float* q = scores + t;
  float* scratch = q + hs;
  const size_t W = (size_t)(NH + 2 * NKV) * hs;  // one cached row: q, k, v
  const bf16* seq = cache + (size_t)b * Tmax * W;
  const bf16* q_row = seq + (size_t)(t - 1) * W + (size_t)h * hs;
  const bf16* keys = seq + C + (size_t)kvh * hs;
  const bf16* values = seq + C + (size_t)(NKV + kvh) * hs;
  const float scale = rsqrtf(static_cast<float>(hs));
  for (int d = threadIdx.x; d < hs; d += blockDim.x) q[d] = ld(q_row, d);
  __syncthreads();
  float max_score = -INFINITY;
  for (int j = threadIdx.x; j < t; j += blockDim.x) {
    const bf16* k = keys + (size_t)j * W;
    float dot = 0.0f;
    for (int d = 0; d < hs; ++d) dot += q[d] * ld(k, d);
    scores[j] = dot * scale;
    max_score = fmaxf(max_score, scores[j]);
  }
  max_score = block_max(max_score, scratch);
  float sum = 0.0f;
  for (int j = threadIdx.x; j < t; j += blockDim.x) {
    const float e = __expf(scores[j] - max_score);
    scores[j] = e;
    sum += e;
  }
  sum = block_sum(sum, scratch);
  __syncthreads();
  const float inv = 1.0f / sum;
  bf16* o = out + (size_t)b * C + (size_t)h * hs;
  for (int d = threadIdx.x; d < hs; d += blockDim.x) {
    float acc = 0.0f;
    for (int j = 0; j < t; ++j) acc += scores[j] * ld(values, (size_t)j * W + d);
    st(o, d, acc * inv);
  }
}

}  // namespace

void attention_decode(void* out, const void* qkv_cache, int B, int Tmax, int t, int C, int NH, int NKV,
                      cudaStream_t s) {
  if (t < 1 || t > Tmax || NH < 1 || C % NH != 0 || NKV < 1 || NH % NKV != 0)
    throw std::invalid_argument("attention_decode: t=" + std::to_string(t) + " outside 1..Tmax=" +
                                std::to_string(Tmax) + ", or C=" + std::to_string(C) + " not divisible by NH=" +
                                std::to_string(NH) + ", or NKV=" + std::to_string(NKV) + " not dividing NH");
  if (B == 0) return;
  const size_t bytes = ((size_t)t + C / NH + 32) * sizeof(float);
  if (bytes > 48 * 1024)
    ZT_CUDA_CHECK(cudaFuncSetAttribute(attention_decode_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(bytes)));
  attention_decode_kernel<<<dim3(NH, B), kDecodeThreads, bytes, s>>>(static_cast<bf16*>(out),
                                                                      static_cast<const bf16*>(qkv_cache), Tmax, t, C, NH, NKV);
  ZT_LAUNCH_CHECK();
}

}  // namespace zt::cuda
