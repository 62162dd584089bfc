// Flash-attention forward (causal, bf16 in, fp32 accumulation on tensor cores via mma.sync): one
// block per (64-query tile, query head, batch), K/V of the head's key/value head; each warp owns 16 query rows and walks the key tiles up
// to the diagonal with an online softmax (running max and sum in base 2), K/V tiles double-buffered
// through cp.async. Writes the output, a bf16 copy of it and the row log-sum-exp into `saved`.
#include <cmath>
#include <stdexcept>
#include <string>

#include "base/cuda_check.h"
#include "kernels/cuda/flash_attention.cuh"
#include "kernels/cuda/flash_tile.cuh"

namespace zt::cuda {

namespace flash {
namespace {

template <int HS>
__global__ void __launch_bounds__(kThreads) forward_kernel(bf16* __restrict__ out, bf16* __restrict__ out_copy,
                                                           float* __restrict__ lse2, const bf16* __restrict__ qkv,
                                                           int T, int C, int NH, int NKV, float scale_log2) {
  using Tl = Tile<HS>;
  constexpr int DT = HS / 8;
  extern __shared__ __align__(16) unsigned char smem[];
  bf16* sQ = reinterpret_cast<bf16*>(smem);
  bf16* sK = sQ + Tl::kElems;      // two buffers
  bf16* sV = sK + 2 * Tl::kElems;  // two buffers
  // The last query tiles see the most keys: start them first.
  const int qt = int(gridDim.x) - 1 - int(blockIdx.x), h = blockIdx.y, b = blockIdx.z;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, t = lane % 4;
  const HeadRows<HS> hr(T, C, NH, NKV, h, b);
  const size_t C3 = hr.C3;
  const bf16* q_src = qkv + hr.qkv;
  const bf16* k_src = qkv + hr.k;
  const bf16* v_src = qkv + hr.v;
  const int q0 = qt * kTile;

  load_tile_async<HS>(sQ, q_src, C3, q0, T);
  load_tile_async<HS>(sK, k_src, C3, 0, T);
  load_tile_async<HS>(sV, v_src, C3, 0, T);
  mma::cp_async_commit();

  uint32_t qf[HS / 16][4];
  float o[DT][4];
#pragma unroll
  for (int d = 0; d < DT; ++d) o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.0f;
  // Rows lo = g and hi = g + 8 of this warp's 16; m: running max, l: this thread's partial sum.
  const int row_lo = q0 + warp * 16 + lane / 4, row_hi = row_lo + 8;
  float m_lo = -INFINITY, m_hi = -INFINITY, l_lo = 0.0f, l_hi = 0.0f;

  for (int j = 0; j <= qt; ++j) {
    const int buf = j & 1;
    step_kv_tiles<HS>(sK, sV, k_src, v_src, C3, j, qt, T);  // tile j ready, j+1 on its way
    if (j == 0) load_a<HS>(qf, sQ, warp * 16, lane);
    const bf16* kt = sK + buf * Tl::kElems;
    const bf16* vt = sV + buf * Tl::kElems;

    float s[8][4];
#pragma unroll
    for (int n = 0; n < 8; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
    mma_a_bt<HS>(s, qf, kt, lane);

    // Scale into base 2, mask keys after the query on the diagonal tile, running max per row.
    const bool diag = j == qt;
    float mx_lo = -INFINITY, mx_hi = -INFINITY;
#pragma unroll
    for (int n = 0; n < 8; ++n) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int key = j * kTile + n * 8 + 2 * t + e;
        const float lo = diag && key > row_lo ? -INFINITY : s[n][e] * scale_log2;
        const float hi = diag && key > row_hi ? -INFINITY : s[n][2 + e] * scale_log2;
        s[n][e] = lo;
        s[n][2 + e] = hi;
        mx_lo = fmaxf(mx_lo, lo);
        mx_hi = fmaxf(mx_hi, hi);
      }
    }
    mx_lo = quad_max(mx_lo);
    mx_hi = quad_max(mx_hi);
    const float mn_lo = fmaxf(m_lo, mx_lo), mn_hi = fmaxf(m_hi, mx_hi);
    // A row whose scores are all masked so far keeps m = -inf: exponentiate against 0 instead, so
    // that every term is exp2(-inf) = 0 and nothing becomes NaN.
    const float base_lo = mn_lo == -INFINITY ? 0.0f : mn_lo, base_hi = mn_hi == -INFINITY ? 0.0f : mn_hi;
    const float corr_lo = exp2f(m_lo - base_lo), corr_hi = exp2f(m_hi - base_hi);
    m_lo = mn_lo;
    m_hi = mn_hi;
    float sum_lo = 0.0f, sum_hi = 0.0f;
#pragma unroll
    for (int n = 0; n < 8; ++n) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        s[n][e] = exp2f(s[n][e] - base_lo);
        s[n][2 + e] = exp2f(s[n][2 + e] - base_hi);
        sum_lo += s[n][e];
        sum_hi += s[n][2 + e];
      }
    }
    l_lo = l_lo * corr_lo + sum_lo;
    l_hi = l_hi * corr_hi + sum_hi;
#pragma unroll
    for (int d = 0; d < DT; ++d) {
      o[d][0] *= corr_lo;
      o[d][1] *= corr_lo;
      o[d][2] *= corr_hi;
      o[d][3] *= corr_hi;
    }
    mma_p_b<HS>(o, s, vt, lane);  // O += P V (P rounded to bf16, as the operand)
    __syncthreads();              // every warp is done with buffer `buf` before it is refilled
  }

  l_lo = quad_sum(l_lo);
  l_hi = quad_sum(l_hi);
  const float inv_lo = 1.0f / l_lo, inv_hi = 1.0f / l_hi;  // l >= 1: the row's max term is 1
#pragma unroll
  for (int half = 0; half < 2; ++half) {  // rows g (accumulators 0, 1) and g + 8 (2, 3)
    const int row = half ? row_hi : row_lo;
    if (row >= T) continue;
    const float inv = half ? inv_hi : inv_lo;
    bf16* r = out + hr.bt + size_t(row) * C;
    bf16* rc = out_copy + hr.bt + size_t(row) * C;
#pragma unroll
    for (int d = 0; d < DT; ++d) {
      store_bf16x2(r, d * 8 + 2 * t, o[d][2 * half] * inv, o[d][2 * half + 1] * inv);
      store_bf16x2(rc, d * 8 + 2 * t, o[d][2 * half] * inv, o[d][2 * half + 1] * inv);
    }
    if (t == 0) lse2[(size_t(b) * NH + h) * T + row] = half ? m_hi + log2f(l_hi) : m_lo + log2f(l_lo);
  }
}

template <int HS>
void launch_forward(void* out, void* saved, const void* qkv, int B, int T, int C, int NH, int NKV, cudaStream_t s) {
  const size_t shm = 5 * Tile<HS>::kBytes;  // Q + two K + two V tiles
  if (shm > 48 * 1024)
    ZT_CUDA_CHECK(cudaFuncSetAttribute(forward_kernel<HS>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shm)));
  auto* lse = static_cast<float*>(saved);
  auto* copy = reinterpret_cast<bf16*>(static_cast<char*>(saved) + saved_lse_bytes(B, T, NH));
  const float scale_log2 = float(1.0 / std::sqrt(double(HS)) * M_LOG2E);
  forward_kernel<HS><<<dim3(tiles_for(T), NH, B), kThreads, shm, s>>>(
      static_cast<bf16*>(out), copy, lse, static_cast<const bf16*>(qkv), T, C, NH, NKV, scale_log2);
  ZT_LAUNCH_CHECK();
}

}  // namespace

void check_args(const char* what, int B, int T, int C, int NH, int NKV, std::initializer_list<const void*> ptrs) {
  if (NH <= 0 || C % NH != 0 || !flash_attention_supports(C / NH))
    throw std::invalid_argument(std::string(what) + ": head size " + std::to_string(NH > 0 ? C / NH : 0) +
                                " (C " + std::to_string(C) + ", heads " + std::to_string(NH) +
                                ") is not one of 16, 32, 64, 128; use the reference attention");
  if (NKV <= 0 || NH % NKV != 0)
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(NKV) + " key/value heads do not divide " +
                                std::to_string(NH) + " query heads");
  if (B > 65535 || NH > 65535)
    throw std::invalid_argument(std::string(what) + ": batch " + std::to_string(B) + " or heads " +
                                std::to_string(NH) + " above the grid limit 65535");
  for (const void* p : ptrs)
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0)
      throw std::invalid_argument(std::string(what) + ": buffers must be 16-byte aligned (Backend::alloc's are)");
}

}  // namespace flash

bool flash_attention_supports(int head_size) {
  return head_size == 16 || head_size == 32 || head_size == 64 || head_size == 128;
}

size_t flash_attention_saved_bytes(int B, int T, int C, int NH) { return flash::saved_bytes(B, T, C, NH); }

void flash_attention_forward(void* out, void* saved, const void* qkv, int B, int T, int C, int NH, int NKV,
                             cudaStream_t s) {
  if (size_t(B) * size_t(T) * size_t(C) == 0) return;
  flash::check_args("flash_attention_forward", B, T, C, NH, NKV, {out, saved, qkv});
  switch (C / NH) {
    case 16: return flash::launch_forward<16>(out, saved, qkv, B, T, C, NH, NKV, s);
    case 32: return flash::launch_forward<32>(out, saved, qkv, B, T, C, NH, NKV, s);
    case 64: return flash::launch_forward<64>(out, saved, qkv, B, T, C, NH, NKV, s);
    case 128: return flash::launch_forward<128>(out, saved, qkv, B, T, C, NH, NKV, s);
  }
}

}  // namespace zt::cuda
