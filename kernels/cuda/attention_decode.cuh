// Generation's attention on the GPU: the newest of t cached positions attends to all t
// (Backend::attention_decode), bf16 cache [B, Tmax, (NH + 2·NKV)·hs] packed as attention_forward's
// qkv, grouped-query heads, fp32 softmax.
#pragma once

#include <cuda_runtime.h>

namespace zt::cuda {

void attention_decode(void* out, const void* qkv_cache, int B, int Tmax, int t, int C, int NH, int NKV,
                      cudaStream_t s);

}  // namespace zt::cuda
