// CUDA block quantizers (block_quant_cuda.h): one thread block per quantization block (an integer
// max of |x| bits over the block, then one element per thread per step); dequantization is
// elementwise over the whole span. Built with --fmad=false so q * scale (+ sum) rounds as on the CPU.
#include "kernels/quant/block_quant_cuda.h"

#include <cmath>

#include "base/cuda_check.h"
#include "kernels/quant/quant_math.h"

namespace zt::quant::cuda {

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float load_in(const float* x, size_t i) { return x[i]; }
__device__ __forceinline__ float load_in(const uint16_t* x, size_t i) { return bf16_bits_to_f32(x[i]); }

template <class In>
__global__ void quantize_kernel(const In* __restrict__ x, size_t n, size_t block, int qmax, bool int4,
                                uint8_t* __restrict__ q, float* __restrict__ scales, DeviceQuantStatus* status,
                                size_t nblocks) {
  __shared__ uint32_t warp_max[kThreads / 32];
  for (size_t b = blockIdx.x; b < nblocks; b += gridDim.x) {
    const size_t begin = b * block;
    const size_t len = n - begin < block ? n - begin : block;
    const In* xb = x + begin;
    uint32_t m = 0;
    for (size_t i = threadIdx.x; i < len; i += blockDim.x) m = max(m, abs_bits(load_in(xb, i)));
    for (int o = 16; o > 0; o >>= 1) m = max(m, __shfl_xor_sync(0xffffffffu, m, o));
    if ((threadIdx.x & 31) == 0) warp_max[threadIdx.x >> 5] = m;
    __syncthreads();
    m = 0;
    for (int w = 0; w < kThreads / 32; ++w) m = max(m, warp_max[w]);
    __syncthreads();  // warp_max is rewritten by the next block of the grid-stride loop
    const bool bad = m >= kInfBits;
    const float s = bad ? NAN : block_scale(m, qmax);
    if (threadIdx.x == 0) {
      scales[b] = s;
      if (bad && status) {
        atomicAdd(&status->bad_blocks, 1ull);
        atomicMin(&status->first_bad_block, (unsigned long long)b);
      }
    }
    const bool zero = bad || m == 0;
    if (!int4) {
      uint8_t* qb = q + begin;
      for (size_t i = threadIdx.x; i < len; i += blockDim.x)
        qb[i] = zero ? 0 : uint8_t(int8_t(quantize_value(load_in(xb, i), s, qmax)));
    } else {
      uint8_t* qb = q + begin / 2;
      for (size_t j = threadIdx.x; 2 * j < len; j += blockDim.x) {
        const int lo = zero ? 0 : quantize_value(load_in(xb, 2 * j), s, qmax);
        const int hi = (zero || 2 * j + 1 >= len) ? 0 : quantize_value(load_in(xb, 2 * j + 1), s, qmax);
        qb[j] = pack_nibbles(lo, hi);
      }
    }
  }
}

enum class OutKind { F32, BF16, AddF32 };

// One thread per element pair (int4: one byte; int8: two bytes), over the whole span.
template <OutKind K, class Out>
__global__ void dequantize_kernel(const uint8_t* __restrict__ q, const float* __restrict__ scales, size_t n,
                                  size_t block, bool int4, Out* __restrict__ out) {
  const size_t pairs = (n + 1) / 2;
  for (size_t j = blockIdx.x * size_t(blockDim.x) + threadIdx.x; j < pairs; j += size_t(gridDim.x) * blockDim.x) {
    const size_t i0 = 2 * j;
    int v[2];
    if (int4) {
      const uint8_t b = q[j];
      v[0] = low_nibble(b);
      v[1] = high_nibble(b);
    } else {
      v[0] = int8_t(q[i0]);
      v[1] = i0 + 1 < n ? int8_t(q[i0 + 1]) : 0;
    }
    for (int k = 0; k < 2; ++k) {
      const size_t i = i0 + k;
      if (i >= n) break;
      const float x = __fmul_rn(float(v[k]), scales[i / block]);
      if constexpr (K == OutKind::F32) out[i] = x;
      else if constexpr (K == OutKind::BF16) out[i] = f32_to_bf16_bits(x);
      else out[i] = __fadd_rn(out[i], x);
    }
  }
}

unsigned grid_of(size_t work) {
  const size_t g = (work + kThreads - 1) / kThreads;
  return unsigned(g == 0 ? 1 : (g < 65535u * 16u ? g : 65535u * 16u));
}

template <class In>
void quantize_any(const In* x, const QuantLayout& l, uint8_t* q, float* scales, DeviceQuantStatus* st,
                  cudaStream_t stream) {
  const size_t nb = l.blocks();
  if (nb == 0) return;
  const unsigned grid = unsigned(nb < 65535u * 16u ? nb : 65535u * 16u);
  quantize_kernel<<<grid, kThreads, 0, stream>>>(x, l.n, l.block, quant_max(l.bits), l.bits == QuantBits::Int4, q,
                                                 scales, st, nb);
  ZT_LAUNCH_CHECK();
}

template <OutKind K, class Out>
void dequantize_any(const uint8_t* q, const float* scales, const QuantLayout& l, Out* out, cudaStream_t stream) {
  if (l.blocks() == 0) return;
  dequantize_kernel<K><<<grid_of((l.n + 1) / 2), kThreads, 0, stream>>>(q, scales, l.n, l.block,
                                                                         l.bits == QuantBits::Int4, out);
  ZT_LAUNCH_CHECK();
}

}  // namespace

void reset_status(DeviceQuantStatus* d_status, cudaStream_t stream) {
  const DeviceQuantStatus init{0, ~0ull};
  ZT_CUDA_CHECK(cudaMemcpyAsync(d_status, &init, sizeof init, cudaMemcpyHostToDevice, stream));
  ZT_CUDA_CHECK(cudaStreamSynchronize(stream));  // init lives on this stack frame
}

QuantStatus to_status(const DeviceQuantStatus& s) {
  QuantStatus st;
  st.bad_blocks = size_t(s.bad_blocks);
  st.first_bad_block = s.bad_blocks ? size_t(s.first_bad_block) : 0;
  return st;
}

void quantize(const float* x, const QuantLayout& layout, uint8_t* q, float* scales, DeviceQuantStatus* d_status,
              cudaStream_t stream) {
  quantize_any(x, layout, q, scales, d_status, stream);
}
void quantize_bf16(const uint16_t* x, const QuantLayout& layout, uint8_t* q, float* scales,
                   DeviceQuantStatus* d_status, cudaStream_t stream) {
  quantize_any(x, layout, q, scales, d_status, stream);
}
void dequantize(const uint8_t* q, const float* scales, const QuantLayout& layout, float* out, cudaStream_t stream) {
  dequantize_any<OutKind::F32>(q, scales, layout, out, stream);
}
void dequantize_bf16(const uint8_t* q, const float* scales, const QuantLayout& layout, uint16_t* out,
                     cudaStream_t stream) {
  dequantize_any<OutKind::BF16>(q, scales, layout, out, stream);
}
void dequantize_add(const uint8_t* q, const float* scales, const QuantLayout& layout, float* sum,
                    cudaStream_t stream) {
  dequantize_any<OutKind::AddF32>(q, scales, layout, sum, stream);
}

}  // namespace zt::quant::cuda
