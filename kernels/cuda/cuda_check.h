// CUDA_CHECK / CUBLAS_CHECK / ZT_LAUNCH_CHECK: the one checking macro per library for the CUDA
// backend. Each prints file:line, the call, the library's error string and a hint, then aborts.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

namespace zt::cuda {

[[noreturn]] void fail_cuda(cudaError_t e, const char* call, const char* file, int line);
[[noreturn]] void fail_cublas(cublasStatus_t s, const char* call, const char* file, int line);

}  // namespace zt::cuda

#define CUDA_CHECK(call)                                                        \
  do {                                                                          \
    cudaError_t zt_cuda_err_ = (call);                                          \
    if (zt_cuda_err_ != cudaSuccess)                                            \
      ::zt::cuda::fail_cuda(zt_cuda_err_, #call, __FILE__, __LINE__);           \
  } while (0)

#define CUBLAS_CHECK(call)                                                      \
  do {                                                                          \
    cublasStatus_t zt_cublas_st_ = (call);                                      \
    if (zt_cublas_st_ != CUBLAS_STATUS_SUCCESS)                                 \
      ::zt::cuda::fail_cublas(zt_cublas_st_, #call, __FILE__, __LINE__);        \
  } while (0)

// After every kernel launch: catches bad launch configurations at the launch site.
#define ZT_LAUNCH_CHECK(kernel_name) CUDA_CHECK(cudaPeekAtLastError())
