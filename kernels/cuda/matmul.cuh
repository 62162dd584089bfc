// Linear layers on bf16 through cuBLASLt (fp32 compute, bias epilogue in forward) plus the
// deterministic bias-gradient column sum; also the raw column-major GEMM the benchmarks time.
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

}  // namespace zt::cuda
