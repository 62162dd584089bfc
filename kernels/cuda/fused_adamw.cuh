// Kernel-side declarations for the fused multi-tensor AdamW (the chunk table passed by value as
// the kernel argument). Included by fused_adamw.cu and the GPU benchmarks.
#pragma once

#include <cuda_runtime.h>

#include "kernels/cuda/adamw.cuh"
#include "kernels/cuda/fused_adamw.h"

namespace zt::cuda {

constexpr int kFusedTile = 4096;  // elements per block (16 per thread with 256 threads)

struct FusedAdamWTable {
  AdamWChunk chunk[kFusedAdamWMaxChunksPerLaunch];
  unsigned block_begin[kFusedAdamWMaxChunksPerLaunch + 1];  // prefix sum of blocks per chunk
  int count;
};

void fused_adamw_launch(const FusedAdamWTable& table, unsigned blocks, DType grad_dtype, const AdamScalars& k,
                        cudaStream_t s);

}  // namespace zt::cuda
