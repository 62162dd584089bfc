// The CUDA and cuBLAS failure paths: the library's error name and string, a hint chosen by the
// error code (unless the call site gave one), then base/check.h's message and abort.
#include "base/cuda_check.h"

#include <string>

namespace zt {

namespace {

const char* cuda_hint(cudaError_t e) {
  switch (e) {
    case cudaErrorInsufficientDriver:
    case cudaErrorNoDevice:
      return "no usable GPU or driver here: check `nvidia-smi` and CUDA_VISIBLE_DEVICES, or use --backend cpu";
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

const char* cublas_name(cublasStatus_t s) {
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

const char* cublas_hint(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_NOT_INITIALIZED: return "no usable GPU or driver, or cublasLtCreate was not called";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "no algorithm for this shape, type or alignment: check pointer alignment and leading dimensions";
    case CUBLAS_STATUS_INVALID_VALUE: return "an argument is out of range: check m, n, k and the leading dimensions";
    case CUBLAS_STATUS_ALLOC_FAILED: return "out of GPU memory for cuBLAS workspace";
    default: return "see the cuBLAS documentation for this status";
  }
}

}  // namespace

void cuda_check_failed(cudaError_t e, const char* call, const char* file, int line, const char* hint) {
  CheckFailure f;
  f.library = "CUDA";
  f.file = file;
  f.line = line;
  f.call = call;
  f.error = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
  f.hint = hint ? hint : cuda_hint(e);
  f.out_of_memory = e == cudaErrorMemoryAllocation;
  check_failed(f);
}

void cublas_check_failed(cublasStatus_t s, const char* call, const char* file, int line, const char* hint) {
  CheckFailure f;
  f.library = "cuBLAS";
  f.file = file;
  f.line = line;
  f.call = call;
  f.error = std::string(cublas_name(s)) + " (" + std::to_string(int(s)) + ")";
  f.hint = hint ? hint : cublas_hint(s);
  f.out_of_memory = s == CUBLAS_STATUS_ALLOC_FAILED;
  check_failed(f);
}

}  // namespace zt
