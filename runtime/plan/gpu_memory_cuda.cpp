// query_gpu_memory through the CUDA runtime (compiled only with ZT_CUDA): device count first, so a
// machine without a driver or a device answers "no GPU" instead of failing.
#include <cuda_runtime_api.h>

#include "base/cuda_check.h"
#include "runtime/plan/gpu_memory.h"

namespace zt {

std::optional<GpuMemory> query_gpu_memory() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (cuda_absent(e)) {
    (void)cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return std::nullopt;
  }
  ZT_CUDA_CHECK(e);
  if (count == 0) return std::nullopt;
  int device = 0;
  ZT_CUDA_CHECK(cudaGetDevice(&device));
  size_t free_b = 0, total_b = 0;
  ZT_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  return GpuMemory{uint64_t(free_b), uint64_t(total_b)};
}

}  // namespace zt
