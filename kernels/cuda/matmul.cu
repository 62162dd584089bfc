// cuBLASLt wrapper for bf16 GEMMs (fp32 compute and scale) with alignment taken from the actual
// pointers, the row-major linear-layer mapping, and the bias-gradient reduction.
#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "kernels/cuda/column_reduce.cuh"
#include "kernels/cuda/matmul.cuh"

namespace zt::cuda {

namespace {

uint32_t alignment_of(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  uint32_t al = 256;
  while (al > 2 && (a % al) != 0) al >>= 1;
  return al;
}

struct LtDescs {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~LtDescs() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

__global__ void add_bias_kernel(bf16* D, const bf16* bias, int m, int n, int ldd) {
  const size_t total = (size_t)m * n;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
    const int col = static_cast<int>(i / m), row = static_cast<int>(i % m);
    const size_t idx = (size_t)col * ldd + row;
    st(D, idx, ld(D, idx) + ld(bias, row));
  }
}

struct BiasGrad {
  const bf16* dout;
  int C;
  __device__ void operator()(int r, int c, float* v) const { v[0] = ld(dout, (size_t)r * C + c); }
};


// D += the fp32 product, rounded once (the product was computed into fp32 scratch).
__global__ void add_f32_into_bf16_kernel(bf16* D, int ldd, const float* P, int m, int n) {
  const size_t total = (size_t)m * n;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
    const int col = static_cast<int>(i / m), row = static_cast<int>(i % m);
    const size_t idx = (size_t)col * ldd + row;
    st(D, idx, ld(D, idx) + P[i]);
  }
}

// The cuBLASLt call behind both entry points; D has type d_type (bf16 or fp32).
void gemm_lt(const LtContext& ctx, bool trans_a, bool trans_b, int m, int n, int k, float alpha, const void* A,
             int lda, const void* B, int ldb, float beta, void* D, cudaDataType_t d_type, int ldd, const void* bias,
             cudaStream_t s);

}  // namespace

void gemm_bf16(const LtContext& ctx, bool trans_a, bool trans_b, int m, int n, int k, float alpha, const void* A,
               int lda, const void* B, int ldb, float beta, void* D, int ldd, const void* bias, cudaStream_t s) {
  gemm_lt(ctx, trans_a, trans_b, m, n, k, alpha, A, lda, B, ldb, beta, D, CUDA_R_16BF, ldd, bias, s);
}

// cuBLASLt with beta = 1 on a bf16 D was measured (H200) to round the product before adding it:
// two roundings. Compute the product in fp32 and add it in one rounding instead.
void gemm_bf16_accumulate(const LtContext& ctx, bool trans_a, bool trans_b, int m, int n, int k, const void* A,
                          int lda, const void* B, int ldb, void* D, int ldd, float* scratch, cudaStream_t s) {
  if (m <= 0 || n <= 0) return;
  gemm_lt(ctx, trans_a, trans_b, m, n, k, 1.0f, A, lda, B, ldb, 0.0f, scratch, CUDA_R_32F, m, nullptr, s);
  add_f32_into_bf16_kernel<<<grid_for((size_t)m * n, 256), 256, 0, s>>>(static_cast<bf16*>(D), ldd, scratch, m, n);
  ZT_LAUNCH_CHECK();
}

namespace {

void gemm_lt(const LtContext& ctx, bool trans_a, bool trans_b, int m, int n, int k, float alpha, const void* A,
             int lda, const void* B, int ldb, float beta, void* D, cudaDataType_t d_type, int ldd, const void* bias,
             cudaStream_t s) {
  if (m <= 0 || n <= 0) return;
  // The bias epilogue wants an aligned vector; otherwise add the bias with a small kernel after.
  const bool epilogue_bias = bias && alignment_of(bias) >= 16;
  LtDescs ds;
  ZT_CUBLAS_CHECK(cublasLtMatmulDescCreate(&ds.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t ta = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  ZT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(ds.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  ZT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(ds.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
  if (epilogue_bias) {
    const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
    const cudaDataType_t bias_type = CUDA_R_16BF;
    ZT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(ds.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
    ZT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(ds.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
    ZT_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(ds.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type)));
  }
  ZT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&ds.a, CUDA_R_16BF, trans_a ? k : m, trans_a ? m : k, lda));
  ZT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&ds.b, CUDA_R_16BF, trans_b ? n : k, trans_b ? k : n, ldb));
  ZT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&ds.d, d_type, m, n, ldd));
  ZT_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&ds.pref));
  ZT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(ds.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &ctx.workspace_bytes, sizeof(ctx.workspace_bytes)));
  const uint32_t al_a = alignment_of(A), al_b = alignment_of(B), al_d = alignment_of(D);
  ZT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(ds.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_a,
                                                    sizeof(al_a)));
  ZT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(ds.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_b,
                                                    sizeof(al_b)));
  ZT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(ds.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_d,
                                                    sizeof(al_d)));
  ZT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(ds.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_d,
                                                    sizeof(al_d)));
  cublasLtMatmulHeuristicResult_t heur{};
  int found = 0;
  const cublasStatus_t hs =
      cublasLtMatmulAlgoGetHeuristic(ctx.handle, ds.op, ds.a, ds.b, ds.d, ds.d, ds.pref, 1, &heur, &found);
  if (hs != CUBLAS_STATUS_SUCCESS || found == 0) {
    char shape[256];
    std::snprintf(shape, sizeof shape,
                  "no algorithm for bf16 GEMM m=%d n=%d k=%d trans_a=%d trans_b=%d lda=%d ldb=%d ldd=%d "
                  "alignment A/B/D=%u/%u/%u bytes bias=%s: check pointer alignment and leading dimensions",
                  m, n, k, (int)trans_a, (int)trans_b, lda, ldb, ldd, al_a, al_b, al_d, epilogue_bias ? "epilogue" : "none");
    ::zt::cublas_check_failed(hs != CUBLAS_STATUS_SUCCESS ? hs : CUBLAS_STATUS_NOT_SUPPORTED,
                              "cublasLtMatmulAlgoGetHeuristic", __FILE__, __LINE__, shape);
  }
  ZT_CUBLAS_CHECK(cublasLtMatmul(ctx.handle, ds.op, &alpha, A, ds.a, B, ds.b, &beta, D, ds.d, D, ds.d, &heur.algo,
                              ctx.workspace, ctx.workspace_bytes, s));
  if (bias && !epilogue_bias) {
    add_bias_kernel<<<grid_for((size_t)m * n, 256), 256, 0, s>>>(static_cast<bf16*>(D), static_cast<const bf16*>(bias),
                                                                 m, n, ldd);
    ZT_LAUNCH_CHECK();
  }
}

}  // namespace

// Row-major X[N,IC] is column-major Xᵀ[IC,N]; so outᵀ[OC,N] = op_T(Wᵀ[IC,OC]) · Xᵀ[IC,N].
void matmul_forward(const LtContext& ctx, void* out, const void* inp, const void* w, const void* bias, int N, int IC,
                    int OC, cudaStream_t s) {
  gemm_bf16(ctx, true, false, OC, N, IC, 1.0f, w, IC, inp, IC, 0.0f, out, OC, bias, s);
}

size_t matmul_backward_scratch_floats(int N, int IC, int OC) {
  const size_t products = std::max((size_t)IC * N, (size_t)IC * OC);  // fp32 dinpᵀ or dwᵀ before adding
  return std::max(products, column_reduce_scratch_floats(N, OC));
}

void matmul_backward(const LtContext& ctx, void* dinp, void* dw, void* dbias, const void* dout, const void* inp,
                     const void* w, int N, int IC, int OC, float* scratch, cudaStream_t s) {
  // dinpᵀ[IC,N] += Wᵀ[IC,OC] · doutᵀ[OC,N]
  // (stream order makes the shared scratch safe: each product is consumed before the next is made)
  if (dinp) gemm_bf16_accumulate(ctx, false, false, IC, N, OC, w, IC, dout, OC, dinp, IC, scratch, s);
  // dwᵀ[IC,OC] += inpᵀ[IC,N] · op_T(doutᵀ[OC,N])
  if (dw) gemm_bf16_accumulate(ctx, false, true, IC, OC, N, inp, IC, dout, OC, dw, IC, scratch, s);
  if (dbias) column_reduce<1>(static_cast<bf16*>(dbias), nullptr, scratch, N, OC,
                              BiasGrad{static_cast<const bf16*>(dout), OC}, s);
}

}  // namespace zt::cuda
