// ZT_CUDA_CHECK, ZT_LAUNCH_CHECK and ZT_CUBLAS_CHECK: the checks for every CUDA runtime and cuBLAS(Lt)
// call in the tree, in base/check.h's one message format; plus cuda_absent(), "no GPU here" codes.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "base/check.h"

namespace zt {

// No driver, no device, or a driver too old for this runtime: callers that probe for a GPU report
// "no GPU" for these instead of failing.
inline bool cuda_absent(cudaError_t e) {
  return e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver || e == cudaErrorNotSupported ||
         e == cudaErrorSystemDriverMismatch || e == cudaErrorCompatNotSupportedOnDevice;
}

// hint: nullptr for the hint that goes with the error code.
[[noreturn]] void cuda_check_failed(cudaError_t e, const char* call, const char* file, int line, const char* hint);
[[noreturn]] void cublas_check_failed(cublasStatus_t s, const char* call, const char* file, int line,
                                      const char* hint);

}  // namespace zt

// ZT_CUDA_CHECK(call) or ZT_CUDA_CHECK(call, "hint for this call site").
#define ZT_CUDA_CHECK(...) ZT_CHECK_PICK_(__VA_ARGS__, ZT_CUDA_CHECK_2_, ZT_CUDA_CHECK_1_, unused)(__VA_ARGS__)
#define ZT_CUDA_CHECK_1_(call) ZT_CUDA_CHECK_2_(call, nullptr)
#define ZT_CUDA_CHECK_2_(call, hint)                                                      \
  do {                                                                                    \
    cudaError_t zt_cuda_err_ = (call);                                                    \
    if (zt_cuda_err_ != cudaSuccess) ::zt::cuda_check_failed(zt_cuda_err_, #call, __FILE__, __LINE__, hint); \
  } while (0)

// After every kernel launch: a bad launch configuration is reported at the launch site.
#define ZT_LAUNCH_CHECK() ZT_CUDA_CHECK(cudaPeekAtLastError())

// ZT_CUBLAS_CHECK(call) or ZT_CUBLAS_CHECK(call, "hint").
#define ZT_CUBLAS_CHECK(...) ZT_CHECK_PICK_(__VA_ARGS__, ZT_CUBLAS_CHECK_2_, ZT_CUBLAS_CHECK_1_, unused)(__VA_ARGS__)
#define ZT_CUBLAS_CHECK_1_(call) ZT_CUBLAS_CHECK_2_(call, nullptr)
#define ZT_CUBLAS_CHECK_2_(call, hint)                                                    \
  do {                                                                                    \
    cublasStatus_t zt_cublas_st_ = (call);                                                \
    if (zt_cublas_st_ != CUBLAS_STATUS_SUCCESS)                                           \
      ::zt::cublas_check_failed(zt_cublas_st_, #call, __FILE__, __LINE__, hint);         \
  } while (0)
