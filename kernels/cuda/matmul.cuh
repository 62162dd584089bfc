// Linear layers on bf16 through cuBLASLt (fp32 compute, bias and GELU epilogues) plus the
// deterministic bias-gradient column sum, the padded LM head, and the raw GEMM the benchmarks time.
#pragma once

#include <cstddef>
#include <cublasLt.h>
#include <cuda_runtime.h>

namespace zt::cuda {

// What every cuBLASLt call needs: the handle and a workspace owned by the backend.
struct LtContext {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

// Column-major D[m,n] = alpha · op(A) · op(B) + beta · D (+ bias[m] broadcast over columns when
// bias != nullptr). A, B, D, bias are bf16. op(X) = Xᵀ when trans_X.
void gemm_bf16(const LtContext& ctx, bool trans_a, bool trans_b, int m, int n, int k, float alpha, const void* A,
               int lda, const void* B, int ldb, float beta, void* D, int ldd, const void* bias, cudaStream_t s);

// out[N,OC] = inp[N,IC] · Wᵀ + bias (row-major, W is [OC,IC]).
void matmul_forward(const LtContext& ctx, void* out, const void* inp, const void* w, const void* bias, int N, int IC,
                    int OC, cudaStream_t s);
// D[m,n] (bf16, column-major) += op(A)·op(B), the product made in fp32 `scratch` (m·n floats) and
// added with one rounding.
void gemm_bf16_accumulate(const LtContext& ctx, bool trans_a, bool trans_b, int m, int n, int k, const void* A,
                          int lda, const void* B, int ldb, void* D, int ldd, float* scratch, cudaStream_t s);
size_t matmul_backward_scratch_floats(int N, int IC, int OC);
// dinp += dout·W; dw += doutᵀ·inp; dbias += Σ_rows dout (each may be null).
void matmul_backward(const LtContext& ctx, void* dinp, void* dw, void* dbias, const void* dout, const void* inp,
                     const void* w, int N, int IC, int OC, float* scratch, cudaStream_t s);

// --- fused ops (Backend's fused section) ---
// out = gelu(pre), pre = inp·Wᵀ + bias: cuBLASLt's GELU_AUX_BIAS epilogue when the shapes allow it
// (leading dimension divisible by 8, 16-byte aligned vectors), else the GEMM and the GELU kernel.
void matmul_bias_gelu_forward(const LtContext& ctx, void* out, void* pre, const void* inp, const void* w,
                              const void* bias, int N, int IC, int OC, cudaStream_t s);
// dpre = (dout·W) ∘ gelu'(pre) (overwritten; the DGELU epilogue, or an fp32 product and one kernel),
// dw += doutᵀ·gelu_out, dbias += Σ dout. scratch: matmul_backward_scratch_floats(N, IC, OC).
void matmul_backward_gelu(const LtContext& ctx, void* dpre, void* dw, void* dbias, const void* dout,
                          const void* gelu_out, const void* pre, const void* w, int N, int IC, int OC, float* scratch,
                          cudaStream_t s);
// The LM head over rows padded to Vp: logits[N, :V] = inp·Wᵀ, logits[N, V:Vp] = 0; backward reads
// dlogits[:, :V] only. scratch: lm_head_backward_scratch_floats(N, C, V).
void lm_head_forward(const LtContext& ctx, void* logits, const void* inp, const void* w, int N, int C, int V, int Vp,
                     cudaStream_t s);
size_t lm_head_backward_scratch_floats(int N, int C, int V);
void lm_head_backward(const LtContext& ctx, void* dinp, void* dw, const void* dlogits, const void* inp, const void* w,
                      int N, int C, int V, int Vp, float* scratch, cudaStream_t s);

}  // namespace zt::cuda
