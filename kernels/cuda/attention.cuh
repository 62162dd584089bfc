// The reference attention: causal multi-head attention on bf16 qkv [B,T,3C] with straightforward
// kernels (saved = fp32 probabilities [B,NH,T,T]; backward needs an fp32 scratch of that size).
// The backend uses flash_attention.cuh; this stays as the GPU tests' second opinion and for head
// sizes the flash kernels are not built for.
#pragma once

#include <cstddef>
#include <cuda_runtime.h>

namespace zt::cuda {

size_t naive_attention_saved_bytes(int B, int T, int C, int NH);
size_t naive_attention_backward_scratch_floats(int B, int T, int NH);
void naive_attention_forward(void* out, float* probs, const void* qkv, int B, int T, int C, int NH, cudaStream_t s);
// dqkv += gradient; `scratch` holds attention_backward_scratch_floats floats.
void naive_attention_backward(void* dqkv, const void* dout, const void* qkv, const float* probs, int B, int T, int C,
                        int NH, float* scratch, cudaStream_t s);

}  // namespace zt::cuda
