// cuBLASLt's library version for `zerotrain env` (compiled only with ZT_CUDA). Needs no GPU.
#include <cublasLt.h>

#include "runtime/plan/env_report.h"

namespace zt {

void query_cublas_env(EnvReport& r) {
  const size_t v = cublasLtGetVersion();  // major*10000 + minor*100 + patch
  r.cublas_version = std::to_string(v / 10000) + "." + std::to_string((v % 10000) / 100) + "." +
                     std::to_string(v % 100);
}

}  // namespace zt
