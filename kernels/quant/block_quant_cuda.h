// The block quantizers of block_quant.h on a CUDA device: the same layouts and the same bits
// (quant_math.h's element rules, no fused multiply-add), on device pointers, queued on a stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/quant/block_quant.h"

namespace zt::quant::cuda {

// Device-side QuantStatus: how many blocks held inf or NaN and the lowest such block index
// (~0 when none). reset_status() prepares it; read it back after the stream has run.
struct DeviceQuantStatus {
  unsigned long long bad_blocks;
  unsigned long long first_bad_block;
};
void reset_status(DeviceQuantStatus* d_status, cudaStream_t stream);
QuantStatus to_status(const DeviceQuantStatus& host_copy);

// x, q, scales, out, sum: device pointers sized as in block_quant.h. d_status may be null.
void quantize(const float* x, const QuantLayout& layout, uint8_t* q, float* scales, DeviceQuantStatus* d_status,
              cudaStream_t stream);
void quantize_bf16(const uint16_t* x, const QuantLayout& layout, uint8_t* q, float* scales,
                   DeviceQuantStatus* d_status, cudaStream_t stream);
void dequantize(const uint8_t* q, const float* scales, const QuantLayout& layout, float* out, cudaStream_t stream);
void dequantize_bf16(const uint8_t* q, const float* scales, const QuantLayout& layout, uint16_t* out,
                     cudaStream_t stream);
void dequantize_add(const uint8_t* q, const float* scales, const QuantLayout& layout, float* sum,
                    cudaStream_t stream);

}  // namespace zt::quant::cuda
