// Fused multi-tensor AdamW for the GPU optimizer step: fp32 master + moments, bf16/fp32 grads,
// and the bf16 working copy written in the same pass (AdamWChunk: kernels/backend.h). The CUDA
// backend's adamw_multi_tensor calls it; the engine reaches it through the Backend interface.
#pragma once

#include <cstddef>

#include "kernels/backend.h"

namespace zt {

// Updates every chunk with one kernel launch per kMaxChunksPerLaunch chunks, on `stream`
// (a cudaStream_t; nullptr = the default stream). grad_dtype is F32, BF16 or F16.
// Padding is the caller's business: pass only the ranges that hold real parameters.
void fused_adamw(const AdamWChunk* chunks, size_t count, DType grad_dtype, const AdamWHyper& h, void* stream);

// Convenience for one flat range.
void fused_adamw_bf16(float* master, const void* grad, DType grad_dtype, float* m, float* v, void* working, size_t n,
                      const AdamWHyper& h, void* stream);

// How many chunks one launch carries in its kernel arguments.
constexpr size_t kFusedAdamWMaxChunksPerLaunch = 48;
// Bytes moved per parameter by one fused step (read master, m, v, grad; write master, m, v, bf16).
inline size_t fused_adamw_bytes_per_param(DType grad_dtype, bool writes_bf16) {
  return 4 * 3 + dtype_size(grad_dtype) + 4 * 3 + (writes_bf16 ? 2 : 0);
}

}  // namespace zt
