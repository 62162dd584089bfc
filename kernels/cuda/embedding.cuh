// Token (+ position, when wpe is given) embedding forward and a deterministic (atomic-free) backward on bf16 buffers.
#pragma once

#include <cstdint>
#include <cuda_runtime.h>

namespace zt::cuda {

void embedding_forward(void* out, const int32_t* tokens, const void* wte, const void* wpe, int B, int T, int C,
                       cudaStream_t s);
// dwte[tok] += Σ dout over the positions holding tok; dwpe[t] += Σ_b dout[b,t].
void embedding_backward(void* dwte, void* dwpe, const void* dout, const int32_t* tokens, int B, int T, int C,
                        cudaStream_t s);

}  // namespace zt::cuda
