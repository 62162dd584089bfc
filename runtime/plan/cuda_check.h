// ZT_CUDA_RT_CHECK: checks a CUDA runtime call; on failure prints file:line, the call, CUDA's error
// name and string and a hint, then aborts. Plus cuda_absent(): the codes that mean "no GPU here".
#pragma once

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>

namespace zt {

// No driver, no device, or a driver too old for this runtime: report "no GPU", not a failure.
inline bool cuda_absent(cudaError_t e) {
  return e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver || e == cudaErrorNotSupported ||
         e == cudaErrorSystemDriverMismatch || e == cudaErrorCompatNotSupportedOnDevice;
}

[[noreturn]] inline void cuda_fail(cudaError_t e, const char* call, const char* file, int line) {
  std::fprintf(stderr,
               "%s:%d: CUDA call failed: %s\n  error: %s (%s)\n  hint: check `nvidia-smi` and that the "
               "driver supports this CUDA runtime; CUDA_VISIBLE_DEVICES may hide every device\n",
               file, line, call, cudaGetErrorName(e), cudaGetErrorString(e));
  std::abort();
}

}  // namespace zt

#define ZT_CUDA_RT_CHECK(call)                                         \
  do {                                                                 \
    cudaError_t zt_cuda_err_ = (call);                                 \
    if (zt_cuda_err_ != cudaSuccess) ::zt::cuda_fail(zt_cuda_err_, #call, __FILE__, __LINE__); \
  } while (0)
