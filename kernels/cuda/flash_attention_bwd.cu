// Flash-attention backward (causal, bf16, fp32 accumulation on tensor cores). Three launches, no
// atomics, every sum in a fixed order:
//   1. D = rowsum(dO * O) per (batch, head, row), from the bf16 copy of O that forward saved;
//   2. dK, dV: one block per (64-key tile, key/value head); each warp owns 16 keys and walks, for
//      each query head of the group (NH / NKV of them, in order), the query tiles from the diagonal
//      down: Sᵀ = K Qᵀ, Pᵀ = exp2(Sᵀ·scale - lse), dV += Pᵀ dO, dPᵀ = V dOᵀ, dSᵀ = Pᵀ (dPᵀ - D),
//      dK += dSᵀ Q — the group's sum in fp32 registers, no replicated K/V;
//   3. dQ: one block per 64-query tile; each warp owns 16 queries and walks the key tiles up to the
//      diagonal: S, P and dS recomputed as in 2, dQ += dS K.
// Recomputing S and dP for dQ costs two more tile products than atomically accumulated dQ would;
// it buys results that are identical run to run.
#include <cmath>
#include <stdexcept>
#include <string>

#include "base/cuda_check.h"
#include "kernels/cuda/flash_attention.cuh"
#include "kernels/cuda/flash_tile.cuh"

namespace zt::cuda {

namespace flash {
namespace {

// One warp per (b, t, h) row: D[(b*NH + h)*T + t] = sum_d dO[b,t,h,d] * O[b,t,h,d] in fp32.
template <int HS>
__global__ void rowdot_kernel(float* __restrict__ dsum, const bf16* __restrict__ dout, const bf16* __restrict__ o,
                              int B, int T, int C, int NH) {
  const size_t row = (size_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (row >= size_t(B) * T * NH) return;
  const int h = int(row % NH);
  const size_t bt = row / NH;  // b * T + t
  const size_t off = bt * C + size_t(h) * HS;
  float acc = 0.0f;
  for (int d = 2 * lane; d < HS; d += 64) {
    const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(dout + off + d));
    const float2 c = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(o + off + d));
    acc += a.x * c.x + a.y * c.y;
  }
  for (int k = 16; k > 0; k >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, k);
  if (lane == 0) {
    const size_t b = bt / T, t = bt % T;
    dsum[(b * NH + h) * T + t] = acc;
  }
}

template <int HS>
__global__ void __launch_bounds__(kThreads) dkdv_kernel(bf16* __restrict__ dqkv, const bf16* __restrict__ dout,
                                                        const bf16* __restrict__ qkv, const float* __restrict__ lse2,
                                                        const float* __restrict__ dsum, int T, int C, int NH,
                                                        int NKV, float scale_log2, float scale) {
  using Tl = Tile<HS>;
  constexpr int DT = HS / 8;
  extern __shared__ __align__(16) unsigned char smem[];
  bf16* sK = reinterpret_cast<bf16*>(smem);
  bf16* sV = sK + Tl::kElems;
  bf16* sQ = sV + Tl::kElems;       // two buffers
  bf16* sO = sQ + 2 * Tl::kElems;   // dO, two buffers
  float* sL = reinterpret_cast<float*>(sO + 2 * Tl::kElems);  // lse2, two buffers of 64
  float* sD = sL + 2 * kTile;                                   // D, two buffers of 64
  const int kt = blockIdx.x, nq = gridDim.x;  // low key tiles have the most queries: they start first
  const int g = blockIdx.y, b = blockIdx.z, G = NH / NKV;  // key/value head g serves query heads g·G ..
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, t = lane % 4;
  const HeadRows<HS> hr(T, C, NH, NKV, g * G, b);  // k, v: head g's; q, bt: the group's first head
  const size_t C3 = hr.C3;
  const bf16* k_src = qkv + hr.k;
  const bf16* v_src = qkv + hr.v;
  const float* l_head = lse2 + (size_t(b) * NH + size_t(g) * G) * T;  // the group's first head
  const float* d_head = dsum + (size_t(b) * NH + size_t(g) * G) * T;

  load_tile_async<HS>(sK, k_src, C3, kt * kTile, T);
  load_tile_async<HS>(sV, v_src, C3, kt * kTile, T);
  // Step `it` of the walk: query head j = it / span of the group, query tile kt + it % span.
  const int span = nq - kt, steps = G * span;
  auto load_queries = [&](int it, int buf) {
    const int j = it / span, i = kt + it % span;
    load_tile_async<HS>(sQ + buf * Tl::kElems, qkv + hr.qkv + size_t(j) * HS, C3, i * kTile, T);
    load_tile_async<HS>(sO + buf * Tl::kElems, dout + hr.bt + size_t(j) * HS, size_t(C), i * kTile, T);
    load_vec_async(sL + buf * kTile, l_head + size_t(j) * T, i * kTile, T, 0);
    load_vec_async(sD + buf * kTile, d_head + size_t(j) * T, i * kTile, T, kTile);
  };
  load_queries(0, 0);
  mma::cp_async_commit();

  uint32_t kf[HS / 16][4], vf[HS / 16][4];
  float dk[DT][4], dv[DT][4];
#pragma unroll
  for (int d = 0; d < DT; ++d)
#pragma unroll
    for (int e = 0; e < 4; ++e) dk[d][e] = dv[d][e] = 0.0f;
  const int key_lo = kt * kTile + warp * 16 + lane / 4, key_hi = key_lo + 8;

  for (int it = 0; it < steps; ++it) {
    const int i = kt + it % span;
    const int buf = it & 1;
    if (it + 1 < steps) {
      load_queries(it + 1, buf ^ 1);
      mma::cp_async_commit();
      mma::cp_async_wait<1>();
    } else {
      mma::cp_async_wait<0>();
    }
    __syncthreads();
    if (it == 0) {
      load_a<HS>(kf, sK, warp * 16, lane);
      load_a<HS>(vf, sV, warp * 16, lane);
    }
    const bf16* qt = sQ + buf * Tl::kElems;
    const bf16* ot = sO + buf * Tl::kElems;
    const float* L = sL + buf * kTile;
    const float* D = sD + buf * kTile;

    float s[8][4], dp[8][4];
#pragma unroll
    for (int n = 0; n < 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[n][e] = dp[n][e] = 0.0f;
    mma_a_bt<HS>(s, kf, qt, lane);   // Sᵀ: rows keys, columns queries
    mma_a_bt<HS>(dp, vf, ot, lane);  // dPᵀ
    const bool diag = i == kt;
#pragma unroll
    for (int n = 0; n < 8; ++n) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int c = n * 8 + 2 * t + e, query = i * kTile + c;
        const bool ok = query < T;  // queries past T: zero rows of Q and dO, but lse/D are not theirs
        const bool ok_lo = ok && !(diag && query < key_lo), ok_hi = ok && !(diag && query < key_hi);
        const float p_lo = ok_lo ? exp2f(s[n][e] * scale_log2 - L[c]) : 0.0f;
        const float p_hi = ok_hi ? exp2f(s[n][2 + e] * scale_log2 - L[c]) : 0.0f;
        s[n][e] = p_lo;
        s[n][2 + e] = p_hi;
        dp[n][e] = p_lo * (dp[n][e] - D[c]);  // dSᵀ
        dp[n][2 + e] = p_hi * (dp[n][2 + e] - D[c]);
      }
    }
    mma_p_b<HS>(dv, s, ot, lane);   // dV += Pᵀ dO
    mma_p_b<HS>(dk, dp, qt, lane);  // dK += dSᵀ Q
    __syncthreads();
  }

#pragma unroll
  for (int half = 0; half < 2; ++half) {  // keys g (accumulators 0, 1) and g + 8 (2, 3)
    const int key = half ? key_hi : key_lo;
    if (key >= T) continue;
    bf16* rk = dqkv + hr.k + size_t(key) * C3;
    bf16* rv = dqkv + hr.v + size_t(key) * C3;
#pragma unroll
    for (int d = 0; d < DT; ++d) {
      add_bf16x2(rk, d * 8 + 2 * t, dk[d][2 * half] * scale, dk[d][2 * half + 1] * scale);
      add_bf16x2(rv, d * 8 + 2 * t, dv[d][2 * half], dv[d][2 * half + 1]);
    }
  }
}

template <int HS>
__global__ void __launch_bounds__(kThreads) dq_kernel(bf16* __restrict__ dqkv, const bf16* __restrict__ dout,
                                                      const bf16* __restrict__ qkv, const float* __restrict__ lse2,
                                                      const float* __restrict__ dsum, int T, int C, int NH,
                                                      int NKV, float scale_log2, float scale) {
  using Tl = Tile<HS>;
  constexpr int DT = HS / 8;
  extern __shared__ __align__(16) unsigned char smem[];
  bf16* sQ = reinterpret_cast<bf16*>(smem);
  bf16* sO = sQ + Tl::kElems;      // dO
  bf16* sK = sO + Tl::kElems;      // two buffers
  bf16* sV = sK + 2 * Tl::kElems;  // two buffers
  const int qt = int(gridDim.x) - 1 - int(blockIdx.x), h = blockIdx.y, b = blockIdx.z;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, t = lane % 4;
  const HeadRows<HS> hr(T, C, NH, NKV, h, b);
  const size_t C3 = hr.C3;
  const bf16* q_src = qkv + hr.qkv;
  const bf16* k_src = qkv + hr.k;
  const bf16* v_src = qkv + hr.v;
  const int q0 = qt * kTile;

  load_tile_async<HS>(sQ, q_src, C3, q0, T);
  load_tile_async<HS>(sO, dout + hr.bt, size_t(C), q0, T);
  load_tile_async<HS>(sK, k_src, C3, 0, T);
  load_tile_async<HS>(sV, v_src, C3, 0, T);
  mma::cp_async_commit();

  const int row_lo = q0 + warp * 16 + lane / 4, row_hi = row_lo + 8;
  const size_t bh = (size_t(b) * NH + h) * T;
  const float lse_lo = row_lo < T ? lse2[bh + row_lo] : 0.0f, lse_hi = row_hi < T ? lse2[bh + row_hi] : 0.0f;
  const float d_lo = row_lo < T ? dsum[bh + row_lo] : 0.0f, d_hi = row_hi < T ? dsum[bh + row_hi] : 0.0f;
  uint32_t qf[HS / 16][4], of[HS / 16][4];
  float dq[DT][4];
#pragma unroll
  for (int d = 0; d < DT; ++d) dq[d][0] = dq[d][1] = dq[d][2] = dq[d][3] = 0.0f;

  for (int j = 0; j <= qt; ++j) {
    const int buf = j & 1;
    step_kv_tiles<HS>(sK, sV, k_src, v_src, C3, j, qt, T);
    if (j == 0) {
      load_a<HS>(qf, sQ, warp * 16, lane);
      load_a<HS>(of, sO, warp * 16, lane);
    }
    const bf16* kt = sK + buf * Tl::kElems;
    const bf16* vt = sV + buf * Tl::kElems;

    float s[8][4], dp[8][4];
#pragma unroll
    for (int n = 0; n < 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[n][e] = dp[n][e] = 0.0f;
    mma_a_bt<HS>(s, qf, kt, lane);   // S = Q Kᵀ
    mma_a_bt<HS>(dp, of, vt, lane);  // dP = dO Vᵀ
    const bool diag = j == qt;
#pragma unroll
    for (int n = 0; n < 8; ++n) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int key = j * kTile + n * 8 + 2 * t + e;
        const bool ok_lo = row_lo < T && !(diag && key > row_lo), ok_hi = row_hi < T && !(diag && key > row_hi);
        const float p_lo = ok_lo ? exp2f(s[n][e] * scale_log2 - lse_lo) : 0.0f;
        const float p_hi = ok_hi ? exp2f(s[n][2 + e] * scale_log2 - lse_hi) : 0.0f;
        dp[n][e] = p_lo * (dp[n][e] - d_lo);  // dS
        dp[n][2 + e] = p_hi * (dp[n][2 + e] - d_hi);
      }
    }
    mma_p_b<HS>(dq, dp, kt, lane);  // dQ += dS K
    __syncthreads();
  }

#pragma unroll
  for (int half = 0; half < 2; ++half) {  // rows g (accumulators 0, 1) and g + 8 (2, 3)
    const int row = half ? row_hi : row_lo;
    if (row >= T) continue;
    bf16* r = dqkv + hr.qkv + size_t(row) * C3;
#pragma unroll
    for (int d = 0; d < DT; ++d) add_bf16x2(r, d * 8 + 2 * t, dq[d][2 * half] * scale, dq[d][2 * half + 1] * scale);
  }
}

template <class K>
void allow_shared(K kernel, size_t bytes) {
  if (bytes > 48 * 1024)
    ZT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
}

template <int HS>
void launch_backward(bf16* dqkv, const bf16* dout, const bf16* qkv, const void* saved, int B, int T, int C, int NH,
                     int NKV, float* dsum, cudaStream_t s) {
  const auto* lse = static_cast<const float*>(saved);
  const auto* o = reinterpret_cast<const bf16*>(static_cast<const char*>(saved) + saved_lse_bytes(B, T, NH));
  const double scale = 1.0 / std::sqrt(double(HS));
  const float scale_log2 = float(scale * M_LOG2E);
  const size_t rows = size_t(B) * T * NH;
  constexpr unsigned kRowdotThreads = 256;
  rowdot_kernel<HS><<<unsigned((rows * 32 + kRowdotThreads - 1) / kRowdotThreads), kRowdotThreads, 0, s>>>(
      dsum, dout, o, B, T, C, NH);
  ZT_LAUNCH_CHECK();
  const size_t shm_kv = 6 * Tile<HS>::kBytes + 4 * kTile * sizeof(float);  // K, V, 2 Q, 2 dO; lse, D
  allow_shared(dkdv_kernel<HS>, shm_kv);
  dkdv_kernel<HS><<<dim3(tiles_for(T), NKV, B), kThreads, shm_kv, s>>>(dqkv, dout, qkv, lse, dsum, T, C, NH, NKV,
                                                                      scale_log2, float(scale));
  ZT_LAUNCH_CHECK();
  const size_t shm_q = 6 * Tile<HS>::kBytes;  // Q, dO, 2 K, 2 V
  allow_shared(dq_kernel<HS>, shm_q);
  dq_kernel<HS><<<dim3(tiles_for(T), NH, B), kThreads, shm_q, s>>>(dqkv, dout, qkv, lse, dsum, T, C, NH, NKV,
                                                                  scale_log2, float(scale));
  ZT_LAUNCH_CHECK();
}

}  // namespace
}  // namespace flash

size_t flash_attention_backward_scratch_floats(int B, int T, int NH) { return size_t(B) * size_t(NH) * size_t(T); }

void flash_attention_backward(void* dqkv, const void* dout, const void* qkv, const void* saved, int B, int T, int C,
                              int NH, int NKV, float* scratch, cudaStream_t s) {
  if (size_t(B) * size_t(T) * size_t(C) == 0) return;
  flash::check_args("flash_attention_backward", B, T, C, NH, NKV, {dqkv, dout, qkv, saved, scratch});
  auto* dx = static_cast<flash::bf16*>(dqkv);
  const auto* d = static_cast<const flash::bf16*>(dout);
  const auto* x = static_cast<const flash::bf16*>(qkv);
  switch (C / NH) {
    case 16: return flash::launch_backward<16>(dx, d, x, saved, B, T, C, NH, NKV, scratch, s);
    case 32: return flash::launch_backward<32>(dx, d, x, saved, B, T, C, NH, NKV, scratch, s);
    case 64: return flash::launch_backward<64>(dx, d, x, saved, B, T, C, NH, NKV, scratch, s);
    case 128: return flash::launch_backward<128>(dx, d, x, saved, B, T, C, NH, NKV, scratch, s);
  }
}

namespace {
template <int HS>
FlashBackwardKernelInfo backward_kernel_info() {
  cudaFuncAttributes kv{}, q{};
  ZT_CUDA_CHECK(cudaFuncGetAttributes(&kv, flash::dkdv_kernel<HS>));
  ZT_CUDA_CHECK(cudaFuncGetAttributes(&q, flash::dq_kernel<HS>));
  FlashBackwardKernelInfo r;
  r.dkdv_registers = kv.numRegs;
  r.dkdv_local_bytes = kv.localSizeBytes;
  r.dq_registers = q.numRegs;
  r.dq_local_bytes = q.localSizeBytes;
  return r;
}
}  // namespace

FlashBackwardKernelInfo flash_attention_backward_kernel_info(int head_size) {
  switch (head_size) {
    case 16: return backward_kernel_info<16>();
    case 32: return backward_kernel_info<32>();
    case 64: return backward_kernel_info<64>();
    case 128: return backward_kernel_info<128>();
  }
  throw std::invalid_argument("flash_attention_backward_kernel_info: head size " + std::to_string(head_size) +
                              " has no flash kernels");
}

}  // namespace zt::cuda
