// Fused multi-tensor AdamW: each block owns one 4096-element tile of one chunk (found from the
// block prefix table), reads master/m/v/grad once, writes master/m/v and the bf16 working copy.
#include <cuda_fp16.h>

#include <stdexcept>

#include "kernels/cuda/adamw_math.cuh"
#include "kernels/cuda/bf16_util.cuh"
#include "base/cuda_check.h"
#include "kernels/cuda/fused_adamw.cuh"

namespace zt::cuda {

namespace {

template <class G>
__device__ __forceinline__ float load_grad(const G* g, size_t i);
template <>
__device__ __forceinline__ float load_grad<float>(const float* g, size_t i) { return g[i]; }
template <>
__device__ __forceinline__ float load_grad<bf16>(const bf16* g, size_t i) { return __bfloat162float(g[i]); }
template <>
__device__ __forceinline__ float load_grad<__half>(const __half* g, size_t i) { return __half2float(g[i]); }

template <class G>
__global__ void __launch_bounds__(256) fused_adamw_kernel(const __grid_constant__ FusedAdamWTable t, AdamScalars k) {
  // Find this block's chunk (at most 48 entries: a short scan).
  int c = 0;
  while (c + 1 < t.count && blockIdx.x >= t.block_begin[c + 1]) ++c;
  const AdamWChunk& ch = t.chunk[c];
  const size_t tile0 = (size_t)(blockIdx.x - t.block_begin[c]) * kFusedTile;
  const size_t end = min(ch.n, tile0 + kFusedTile);
  const G* g = static_cast<const G*>(ch.grad);
  bf16* out = static_cast<bf16*>(ch.working);
#pragma unroll 4
  for (size_t i = tile0 + threadIdx.x; i < end; i += blockDim.x) {
    float p = ch.master[i], m = ch.m[i], v = ch.v[i];
    adam_update_element(p, load_grad(g, i), m, v, k);
    ch.master[i] = p;
    ch.m[i] = m;
    ch.v[i] = v;
    if (out) out[i] = __float2bfloat16_rn(p);
  }
}

}  // namespace

void fused_adamw_launch(const FusedAdamWTable& table, unsigned blocks, DType grad_dtype, const AdamScalars& k,
                        cudaStream_t s) {
  if (blocks == 0) return;
  switch (grad_dtype) {
    case DType::F32:
      fused_adamw_kernel<float><<<blocks, 256, 0, s>>>(table, k);
      break;
    case DType::BF16:
      fused_adamw_kernel<bf16><<<blocks, 256, 0, s>>>(table, k);
      break;
    case DType::F16:
      fused_adamw_kernel<__half><<<blocks, 256, 0, s>>>(table, k);
      break;
  }
  ZT_LAUNCH_CHECK();
}

}  // namespace zt::cuda

namespace zt {

void fused_adamw(const AdamWChunk* chunks, size_t count, DType grad_dtype, const AdamWHyper& h, void* stream) {
  const auto k = adam_scalars(h);
  auto s = static_cast<cudaStream_t>(stream);
  cuda::FusedAdamWTable t{};
  unsigned blocks = 0;
  auto flush = [&] {
    t.block_begin[t.count] = blocks;
    cuda::fused_adamw_launch(t, blocks, grad_dtype, k, s);
    t = cuda::FusedAdamWTable{};
    blocks = 0;
  };
  constexpr size_t kMaxBlocks = 1u << 30;  // keeps the prefix table in unsigned range
  for (size_t i = 0; i < count; ++i) {
    AdamWChunk ch = chunks[i];
    while (ch.n > 0) {
      // Split a chunk that would overflow this launch's block budget.
      size_t room = (kMaxBlocks - blocks) * cuda::kFusedTile;
      AdamWChunk part = ch;
      part.n = ch.n < room ? ch.n : room;
      t.chunk[t.count] = part;
      t.block_begin[t.count] = blocks;
      blocks += static_cast<unsigned>((part.n + cuda::kFusedTile - 1) / cuda::kFusedTile);
      ++t.count;
      ch.master += part.n;
      ch.m += part.n;
      ch.v += part.n;
      ch.grad = static_cast<const char*>(ch.grad) + part.n * dtype_size(grad_dtype);
      if (ch.working) ch.working = static_cast<char*>(ch.working) + part.n * 2;
      ch.n -= part.n;
      if (t.count == static_cast<int>(kFusedAdamWMaxChunksPerLaunch) || blocks >= kMaxBlocks) flush();
    }
  }
  if (t.count > 0) flush();
}

void fused_adamw_bf16(float* master, const void* grad, DType grad_dtype, float* m, float* v, void* working, size_t n,
                      const AdamWHyper& h, void* stream) {
  AdamWChunk c{master, grad, m, v, working, n};
  fused_adamw(&c, 1, grad_dtype, h, stream);
}

}  // namespace zt
