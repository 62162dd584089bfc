// SwiGLU (Llama's MLP activation) on bf16 rows packed [gate | up]: out = silu(gate) ∘ up, and the
// accumulating backward; fp32 math (Backend::swiglu_forward/swiglu_backward).
#pragma once

#include <cuda_runtime.h>

namespace zt::cuda {

void swiglu_forward(void* out, const void* gate_up, int N, int F, cudaStream_t s);
void swiglu_backward(void* dgate_up, const void* dout, const void* gate_up, int N, int F, cudaStream_t s);

}  // namespace zt::cuda
