// ZT_COMM_CUDA_CHECK and ZT_NCCL_CHECK: the checks for CUDA runtime and NCCL calls in collectives/
// (which may not include kernels/): print file:line, the call, the library's error string and a hint, abort.
#pragma once

namespace zt {

[[noreturn]] void comm_cuda_check_failed(const char* file, int line, const char* call, int err);
[[noreturn]] void nccl_check_failed(const char* file, int line, const char* call, int err, const char* last_error);

}  // namespace zt

#define ZT_COMM_CUDA_CHECK(call)                                                            \
  do {                                                                                      \
    auto zt_cuda_err_ = (call);                                                             \
    if (zt_cuda_err_ != 0) ::zt::comm_cuda_check_failed(__FILE__, __LINE__, #call, int(zt_cuda_err_)); \
  } while (0)

// Needs <nccl.h> where used.
#define ZT_NCCL_CHECK(call)                                                                         \
  do {                                                                                              \
    ncclResult_t zt_nccl_err_ = (call);                                                             \
    if (zt_nccl_err_ != ncclSuccess && zt_nccl_err_ != ncclInProgress)                              \
      ::zt::nccl_check_failed(__FILE__, __LINE__, #call, int(zt_nccl_err_), ncclGetLastError(nullptr)); \
  } while (0)
