// Residual add (out = a + b, out may alias a or b) and accumulate (acc += x) on bf16 buffers.
#pragma once

#include <cstddef>
#include <cuda_runtime.h>

namespace zt::cuda {

void residual_forward(void* out, const void* a, const void* b, size_t n, cudaStream_t s);
void accumulate(void* acc, const void* x, size_t n, cudaStream_t s);

}  // namespace zt::cuda
