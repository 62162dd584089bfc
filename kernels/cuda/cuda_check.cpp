// Failure reporting for CUDA_CHECK and CUBLAS_CHECK: message with file:line, call, error string
// and a hint, then abort (a CUDA error leaves the context unusable, so the job must stop).
#include "kernels/cuda/cuda_check.h"

#include <cstdio>
#include <cstdlib>

namespace zt::cuda {

static const char* cuda_hint(cudaError_t e) {
  switch (e) {
    case cudaErrorInsufficientDriver:
    case cudaErrorNoDevice:
      return "no usable GPU/driver here: run on a GPU machine or use --backend cpu";
    case cudaErrorMemoryAllocation:
      return "out of GPU memory: lower the micro-batch size, use a higher ZeRO stage or offload";
    case cudaErrorInvalidConfiguration:
    case cudaErrorInvalidValue:
      return "bad launch configuration or argument: check the sizes passed to this op";
    case cudaErrorIllegalAddress:
    case cudaErrorMisalignedAddress:
      return "a kernel touched memory it does not own: run under compute-sanitizer to find it";
    case cudaErrorNoKernelImageForDevice:
      return "no kernel image for this GPU: rebuild with CMAKE_CUDA_ARCHITECTURES set for it";
    default:
      return "see the CUDA runtime documentation for this error";
  }
}

static const char* cublas_name(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "unknown cuBLAS status";
  }
}

static const char* cublas_hint(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_NOT_INITIALIZED: return "no usable GPU/driver, or cublasLtCreate was not called";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "no algorithm for this shape/type/alignment: check pointer alignment and leading dimensions";
    case CUBLAS_STATUS_INVALID_VALUE: return "an argument is out of range: check m, n, k and leading dims";
    default: return "see the cuBLAS documentation for this status";
  }
}

void fail_cuda(cudaError_t e, const char* call, const char* file, int line) {
  std::fprintf(stderr, "CUDA error at %s:%d: %s failed: %s (%s). Hint: %s\n", file, line, call,
               cudaGetErrorString(e), cudaGetErrorName(e), cuda_hint(e));
  std::fflush(stderr);
  std::abort();
}

void fail_cublas(cublasStatus_t s, const char* call, const char* file, int line) {
  std::fprintf(stderr, "cuBLAS error at %s:%d: %s failed: %s (%d). Hint: %s\n", file, line, call,
               cublas_name(s), static_cast<int>(s), cublas_hint(s));
  std::fflush(stderr);
  std::abort();
}

}  // namespace zt::cuda
