// NCCL's library version for `zerotrain env` (compiled only with ZT_CUDA; NCCL ships with it).
#include <nccl.h>

#include <cstdio>
#include <cstdlib>

#include "runtime/plan/env_report.h"

#define ZT_NCCL_ENV_CHECK(call)                                                                  \
  do {                                                                                           \
    ncclResult_t zt_nccl_res_ = (call);                                                          \
    if (zt_nccl_res_ != ncclSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d: NCCL call failed: %s\n  error: %s\n  hint: check that libnccl.so.2 " \
                   "matches the nccl.h zerotrain was built with\n",                               \
                   __FILE__, __LINE__, #call, ncclGetErrorString(zt_nccl_res_));                 \
      std::abort();                                                                              \
    }                                                                                            \
  } while (0)

namespace zt {

void query_nccl_env(EnvReport& r) {
  r.with_nccl = true;
  int v = 0;
  ZT_NCCL_ENV_CHECK(ncclGetVersion(&v));
  // Codes from 2.9 on are major*10000 + minor*100 + patch; older ones major*1000 + minor*100 + patch.
  const int major = v >= 10000 ? v / 10000 : v / 1000;
  const int minor = v >= 10000 ? (v % 10000) / 100 : (v % 1000) / 100;
  const int patch = v % 100;
  r.nccl_version = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace zt
