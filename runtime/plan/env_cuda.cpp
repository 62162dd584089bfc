// CUDA runtime and driver versions and the GPU list for `zerotrain env` (compiled only with
// ZT_CUDA). A machine without a driver or a device reports that, never an error.
#include <cuda_runtime_api.h>

#include "base/cuda_check.h"
#include "runtime/plan/env_report.h"

namespace zt {

namespace {
std::string cuda_version_string(int v) {  // 13000 -> "13.0", 12040 -> "12.4"
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}
}  // namespace

void query_cuda_env(EnvReport& r) {
  r.with_cuda = true;
  int rt = 0;
  ZT_CUDA_CHECK(cudaRuntimeGetVersion(&rt));
  r.cuda_runtime = cuda_version_string(rt);
  int drv = 0;
  const cudaError_t de = cudaDriverGetVersion(&drv);
  if (de != cudaSuccess && !cuda_absent(de)) ZT_CUDA_CHECK(de);
  r.cuda_driver = (de != cudaSuccess || drv == 0) ? "no driver" : cuda_version_string(drv);

  int count = 0;
  const cudaError_t ce = cudaGetDeviceCount(&count);
  if (cuda_absent(ce)) {
    (void)cudaGetLastError();
    if (ce == cudaErrorNoDevice) r.gpu_note = "none (no device)";
    else if (ce == cudaErrorInsufficientDriver && r.cuda_driver == "no driver") r.gpu_note = "none (no driver)";
    else r.gpu_note = std::string("none (") + cudaGetErrorString(ce) + ")";
    return;
  }
  ZT_CUDA_CHECK(ce);
  if (count == 0) {
    r.gpu_note = "none (no device)";
    return;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    ZT_CUDA_CHECK(cudaGetDeviceProperties(&prop, i));
    r.gpus.push_back(GpuDescription{i, prop.name, uint64_t(prop.totalGlobalMem),
                                    std::to_string(prop.major) + "." + std::to_string(prop.minor)});
  }
  r.gpu_note = std::to_string(count) + " device(s)";
}

}  // namespace zt
