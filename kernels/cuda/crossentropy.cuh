// Softmax cross-entropy forward+backward over V classes (fp32 math on bf16 logits): per-row loss
// (fp32) and dlogits = (softmax − onehot)·dloss / (number of rows with a target >= 0).
#pragma once

#include <cstdint>
#include <cuda_runtime.h>

namespace zt::cuda {

// Rows are Vp apart (columns V..Vp masked: not read, gradient 0); dlogits may be logits (in place).
// `scratch_count` is one device int the kernel uses to hold the valid-row count.
void crossentropy_forward_backward(float* losses, void* dlogits, const void* logits, const int32_t* targets, int N,
                                   int V, int Vp, float dloss, int* scratch_count, cudaStream_t s);

}  // namespace zt::cuda
