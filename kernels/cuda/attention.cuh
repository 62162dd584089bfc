// The reference attention: causal attention with NH query heads on NKV key/value heads (grouped-query;
// NKV = NH is multi-head, qkv [B,T,3C]) on bf16 qkv [B,T,(NH + 2·NKV)·hs] packed as
// Backend::attention_forward's, with straightforward kernels (saved = fp32 probabilities
// [B,NH,T,T]; backward needs an fp32 scratch of that size).
// The backend uses flash_attention.cuh; this stays as the GPU tests' second opinion and for head
// sizes the flash kernels are not built for.
#pragma once

#include <cstddef>
#include <cuda_runtime.h>

namespace zt::cuda {

size_t naive_attention_saved_bytes(int B, int T, int C, int NH);
size_t naive_attention_backward_scratch_floats(int B, int T, int NH);
void naive_attention_forward(void* out, float* probs, const void* qkv, int B, int T, int C, int NH, int NKV,
                             cudaStream_t s);
// dqkv += gradient; `scratch` holds attention_backward_scratch_floats floats.
void naive_attention_backward(void* dqkv, const void* dout, const void* qkv, const float* probs, int B, int T, int C,
                              int NH, int NKV, float* scratch, cudaStream_t s);

}  // namespace zt::cuda
