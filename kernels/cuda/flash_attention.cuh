// Flash attention on the GPU: causal multi-head and grouped-query self-attention on bf16 qkv
// [B, T, (NH + 2·NKV)·hs] (Backend::attention_forward's packing; [B,T,3C] when NKV == NH) with
// fp32 accumulation on tensor cores, no T x T matrix in memory (online softmax; backward recomputes).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace zt::cuda {

// Head sizes the kernels are built for (GPT-2's is 64).
bool flash_attention_supports(int head_size);

// `saved`: the base-2 log-sum-exp of every row (fp32 [B,NH,T]) and a bf16 copy of the output
// ([B,T,C]) — O(T), not O(T²).
size_t flash_attention_saved_bytes(int B, int T, int C, int NH);
// Backward's scratch: D = rowsum(dO * O), fp32 [B,NH,T].
size_t flash_attention_backward_scratch_floats(int B, int T, int NH);

// out [B,T,C] = softmax(q kᵀ / sqrt(hs), causal) v per query head, k and v of its key/value head
// h / (NH / NKV); writes `saved`.
void flash_attention_forward(void* out, void* saved, const void* qkv, int B, int T, int C, int NH, int NKV,
                             cudaStream_t s);
// dqkv += d(qkv) (one bf16 rounding of the fp32 sum per element). No atomics: dq and dk/dv come
// from two kernels with fixed reduction orders, so results are bitwise reproducible. dK and dV of a
// key/value head are summed in fp32 over its NH / NKV query heads inside one block (no replicas).
void flash_attention_backward(void* dqkv, const void* dout, const void* qkv, const void* saved, int B, int T, int C,
                              int NH, int NKV, float* scratch, cudaStream_t s);

// Registers and local memory per thread of the two backward kernels for one head size, as loaded
// for the current device (cudaFuncGetAttributes: needs a GPU). local_bytes > 0 is register spill:
// at head size 128 and sm_90, ptxas (CUDA 13.0) reports 444 B of spill stores into a 216 B stack
// frame in the dK/dV kernel (532 B into 336 B before its query walk covered a kv head's group) and
// 24 B in dQ (255 registers each): correct, but slower. Head size 64: no spill (253 and 176).
struct FlashBackwardKernelInfo {
  int dkdv_registers = 0, dq_registers = 0;
  size_t dkdv_local_bytes = 0, dq_local_bytes = 0;
};
FlashBackwardKernelInfo flash_attention_backward_kernel_info(int head_size);

}  // namespace zt::cuda
