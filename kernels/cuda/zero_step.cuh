// Device kernels of the ZeRO step: the fixed-order sum of squares (a rank's global-norm partial) and
// in-place scaling, over act-dtype (bf16) or fp32 buffers.
#pragma once

#include <cstddef>
#include <cuda_runtime.h>

#include "base/dtype.h"

namespace zt::cuda {

// Doubles of device scratch sum_squares needs for n elements (one per 4096-element block, plus 1).
size_t sum_squares_scratch_doubles(size_t n);
// Σ (x_i · scale)² in double. Pass 1: one thread block per 4096 elements, each thread summing its
// strided elements in order, then a fixed shared-memory tree; pass 2: one block sums the block
// partials the same way. Deterministic (no atomics); writes the result to *out (device).
void sum_squares(const void* x, DType t, size_t n, float scale, double* scratch, double* out, cudaStream_t s);
void scale(void* x, DType t, float s, size_t n, cudaStream_t stream);

}  // namespace zt::cuda
