// cuBLASLt wrapper for bf16 GEMMs (fp32 compute and scale) with alignment taken from the actual
// pointers, the row-major linear-layer mapping, and the bias-gradient reduction.
#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "kernels/cuda/column_reduce.cuh"
#include "kernels/cuda/gelu.cuh"
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

// A cuBLASLt epilogue: BIAS (bias[m] over columns), GELU_AUX_BIAS (D = gelu(AB + bias), aux = AB +
// bias), DGELU (D = AB ∘ gelu'(aux)). aux is bf16, column-major with leading dimension aux_ld.
struct Epilogue {
  cublasLtEpilogue_t kind = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;
  const void* aux = nullptr;
  int64_t aux_ld = 0;
};

// The cuBLASLt call behind every entry point; D has type d_type (bf16 or fp32). With `optional`,
// returns false instead of failing when cuBLASLt offers no algorithm (the caller then runs the
// unfused kernels); otherwise returns true or throws.
bool gemm_lt(const LtContext& ctx, bool trans_a, bool trans_b, int m, int n, int k, float alpha, const void* A,
             int lda, const void* B, int ldb, float beta, void* D, cudaDataType_t d_type, int ldd, const Epilogue& epi,
             bool optional, cudaStream_t s);

// The plain GEMM with an optional bias: through the BIAS epilogue when the vector is aligned for it,
// else a small kernel after.
void gemm_bias(const LtContext& ctx, bool trans_a, bool trans_b, int m, int n, int k, float alpha, const void* A,
               int lda, const void* B, int ldb, float beta, void* D, cudaDataType_t d_type, int ldd, const void* bias,
               cudaStream_t s);

}  // namespace

void gemm_bf16(const LtContext& ctx, bool trans_a, bool trans_b, int m, int n, int k, float alpha, const void* A,
               int lda, const void* B, int ldb, float beta, void* D, int ldd, const void* bias, cudaStream_t s) {
  gemm_bias(ctx, trans_a, trans_b, m, n, k, alpha, A, lda, B, ldb, beta, D, CUDA_R_16BF, ldd, bias, s);
}

// cuBLASLt with beta = 1 on a bf16 D was measured (H200) to round the product before adding it:
// two roundings. Compute the product in fp32 and add it in one rounding instead.
void gemm_bf16_accumulate(const LtContext& ctx, bool trans_a, bool trans_b, int m, int n, int k, const void* A,
                          int lda, const void* B, int ldb, void* D, int ldd, float* scratch, cudaStream_t s) {
  if (m <= 0 || n <= 0) return;
  gemm_lt(ctx, trans_a, trans_b, m, n, k, 1.0f, A, lda, B, ldb, 0.0f, scratch, CUDA_R_32F, m, Epilogue{}, false, s);
  add_f32_into_bf16_kernel<<<grid_for((size_t)m * n, 256), 256, 0, s>>>(static_cast<bf16*>(D), ldd, scratch, m, n);
  ZT_LAUNCH_CHECK();
}

namespace {

bool gemm_lt(const LtContext& ctx, bool trans_a, bool trans_b, int m, int n, int k, float alpha, const void* A,
             int lda, const void* B, int ldb, float beta, void* D, cudaDataType_t d_type, int ldd, const Epilogue& epi,
             bool optional, cudaStream_t s) {
  if (m <= 0 || n <= 0) return true;
  LtDescs ds;
  ZT_CUBLAS_CHECK(cublasLtMatmulDescCreate(&ds.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t ta = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  ZT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(ds.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  ZT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(ds.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
  if (epi.kind != CUBLASLT_EPILOGUE_DEFAULT) {
    ZT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(ds.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi.kind, sizeof(epi.kind)));
  }
  if (epi.bias) {
    const cudaDataType_t bias_type = CUDA_R_16BF;
    ZT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(ds.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &epi.bias, sizeof(epi.bias)));
    ZT_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(ds.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type)));
  }
  if (epi.aux) {
    const cudaDataType_t aux_type = CUDA_R_16BF;
    ZT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(ds.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &epi.aux,
                                                sizeof(epi.aux)));
    ZT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(ds.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &epi.aux_ld,
                                                sizeof(epi.aux_ld)));
    ZT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(ds.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, &aux_type,
                                                sizeof(aux_type)));
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
    if (optional) return false;
    char shape[256];
    std::snprintf(shape, sizeof shape,
                  "no algorithm for bf16 GEMM m=%d n=%d k=%d trans_a=%d trans_b=%d lda=%d ldb=%d ldd=%d "
                  "alignment A/B/D=%u/%u/%u bytes epilogue=%d: check pointer alignment and leading dimensions",
                  m, n, k, (int)trans_a, (int)trans_b, lda, ldb, ldd, al_a, al_b, al_d, (int)epi.kind);
    ::zt::cublas_check_failed(hs != CUBLAS_STATUS_SUCCESS ? hs : CUBLAS_STATUS_NOT_SUPPORTED,
                              "cublasLtMatmulAlgoGetHeuristic", __FILE__, __LINE__, shape);
  }
  ZT_CUBLAS_CHECK(cublasLtMatmul(ctx.handle, ds.op, &alpha, A, ds.a, B, ds.b, &beta, D, ds.d, D, ds.d, &heur.algo,
                              ctx.workspace, ctx.workspace_bytes, s));
  return true;
}

void gemm_bias(const LtContext& ctx, bool trans_a, bool trans_b, int m, int n, int k, float alpha, const void* A,
               int lda, const void* B, int ldb, float beta, void* D, cudaDataType_t d_type, int ldd, const void* bias,
               cudaStream_t s) {
  if (m <= 0 || n <= 0) return;
  const bool epilogue_bias = bias && alignment_of(bias) >= 16;
  Epilogue epi;
  if (epilogue_bias) {
    epi.kind = CUBLASLT_EPILOGUE_BIAS;
    epi.bias = bias;
  }
  gemm_lt(ctx, trans_a, trans_b, m, n, k, alpha, A, lda, B, ldb, beta, D, d_type, ldd, epi, false, s);
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

// --- fused linear layers -------------------------------------------------------------------------

// The GELU epilogues need the aux leading dimension divisible by 8 and 16-byte aligned vectors.
static bool gelu_epilogue_fits(const void* p, int ld) { return ld % 8 == 0 && alignment_of(p) >= 16; }

void matmul_bias_gelu_forward(const LtContext& ctx, void* out, void* pre, const void* inp, const void* w,
                              const void* bias, int N, int IC, int OC, cudaStream_t s) {
  if (N <= 0 || OC <= 0) return;
  // preᵀ[OC,N] = Wᵀ·inpᵀ + bias, outᵀ = gelu(preᵀ): one GEMM with the GELU_AUX_BIAS epilogue.
  if (bias && gelu_epilogue_fits(pre, OC) && alignment_of(bias) >= 16) {
    Epilogue epi{CUBLASLT_EPILOGUE_GELU_AUX_BIAS, bias, pre, OC};
    if (gemm_lt(ctx, true, false, OC, N, IC, 1.0f, w, IC, inp, IC, 0.0f, out, CUDA_R_16BF, OC, epi, true, s)) return;
  }
  // Unfused: the GEMM (with its bias) into pre, then the GELU kernel.
  matmul_forward(ctx, pre, inp, w, bias, N, IC, OC, s);
  gelu_forward(out, pre, (size_t)N * OC, s);
}

void matmul_backward_gelu(const LtContext& ctx, void* dpre, void* dw, void* dbias, const void* dout,
                          const void* gelu_out, const void* pre, const void* w, int N, int IC, int OC, float* scratch,
                          cudaStream_t s) {
  if (N > 0 && IC > 0) {
    // dpreᵀ[IC,N] = (Wᵀ[IC,OC] · doutᵀ[OC,N]) ∘ gelu'(preᵀ): the DGELU epilogue, one rounding.
    bool done = false;
    if (gelu_epilogue_fits(pre, IC)) {
      Epilogue epi{CUBLASLT_EPILOGUE_DGELU, nullptr, pre, IC};
      done = gemm_lt(ctx, false, false, IC, N, OC, 1.0f, w, IC, dout, OC, 0.0f, dpre, CUDA_R_16BF, IC, epi, true, s);
    }
    if (!done) {  // the product in fp32, then one kernel multiplies by gelu' and rounds once
      gemm_lt(ctx, false, false, IC, N, OC, 1.0f, w, IC, dout, OC, 0.0f, scratch, CUDA_R_32F, IC, Epilogue{}, false, s);
      gelu_backward_from_f32(dpre, scratch, pre, (size_t)N * IC, s);
    }
  }
  matmul_backward(ctx, nullptr, dw, dbias, dout, gelu_out, w, N, IC, OC, scratch, s);
}

// logitsᵀ[V,N] (leading dimension Vp) = Wᵀ·inpᵀ; the padded rows V..Vp of each column set to 0.
void lm_head_forward(const LtContext& ctx, void* logits, const void* inp, const void* w, int N, int C, int V, int Vp,
                     cudaStream_t s) {
  if (N <= 0) return;
  gemm_bf16(ctx, true, false, V, N, C, 1.0f, w, C, inp, C, 0.0f, logits, Vp, nullptr, s);
  if (Vp > V)
    ZT_CUDA_CHECK(cudaMemset2DAsync(static_cast<bf16*>(logits) + V, size_t(Vp) * sizeof(bf16), 0,
                                 size_t(Vp - V) * sizeof(bf16), size_t(N), s));
}

size_t lm_head_backward_scratch_floats(int N, int C, int V) { return std::max((size_t)C * N, (size_t)C * V); }

void lm_head_backward(const LtContext& ctx, void* dinp, void* dw, const void* dlogits, const void* inp, const void* w,
                      int N, int C, int V, int Vp, float* scratch, cudaStream_t s) {
  // dinpᵀ[C,N] += Wᵀ[C,V] · dlogitsᵀ[V,N] (leading dimension Vp: the padded rows are not read)
  if (dinp) gemm_bf16_accumulate(ctx, false, false, C, N, V, w, C, dlogits, Vp, dinp, C, scratch, s);
  // dwᵀ[C,V] += inpᵀ[C,N] · op_T(dlogitsᵀ[V,N])
  if (dw) gemm_bf16_accumulate(ctx, false, true, C, V, N, inp, C, dlogits, Vp, dw, C, scratch, s);
}

}  // namespace zt::cuda
