// Failure paths of ZT_COMM_CUDA_CHECK and ZT_NCCL_CHECK.
#include "collectives/cuda_check.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>

namespace zt {

void comm_cuda_check_failed(const char* file, int line, const char* call, int err) {
  std::fprintf(stderr,
               "%s:%d: CUDA call failed: %s\n  error: %s (%s)\n  hint: check that a GPU is visible "
               "(nvidia-smi, CUDA_VISIBLE_DEVICES) and that the driver supports this CUDA runtime\n",
               file, line, call, cudaGetErrorName(cudaError_t(err)), cudaGetErrorString(cudaError_t(err)));
  std::fflush(stderr);
  std::abort();
}

void nccl_check_failed(const char* file, int line, const char* call, int err, const char* last_error) {
  std::fprintf(stderr,
               "%s:%d: NCCL call failed: %s\n  error: %s%s%s\n  hint: rerun with NCCL_DEBUG=WARN for NCCL's "
               "own diagnosis; a peer rank may have died or called a different collective\n",
               file, line, call, ncclGetErrorString(ncclResult_t(err)), last_error && *last_error ? " — " : "",
               last_error ? last_error : "");
  std::fflush(stderr);
  std::abort();
}

}  // namespace zt
