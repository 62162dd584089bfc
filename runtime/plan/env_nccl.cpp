// NCCL's library version for `zerotrain env` (compiled only with ZT_CUDA; NCCL ships with it).
#include "base/nccl_check.h"
#include <nccl.h>

#include <cstdio>
#include <cstdlib>

#include "runtime/plan/env_report.h"


namespace zt {

void query_nccl_env(EnvReport& r) {
  r.with_nccl = true;
  int v = 0;
  ZT_NCCL_CHECK(ncclGetVersion(&v));
  // Codes from 2.9 on are major*10000 + minor*100 + patch; older ones major*1000 + minor*100 + patch.
  const int major = v >= 10000 ? v / 10000 : v / 1000;
  const int minor = v >= 10000 ? (v % 10000) / 100 : (v % 1000) / 100;
  const int patch = v % 100;
  r.nccl_version = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace zt
