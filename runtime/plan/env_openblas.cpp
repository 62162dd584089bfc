// OpenBLAS's build configuration for `zerotrain env` (openblas_get_config, openblas_get_corename).
#include <cblas.h>

#include "runtime/plan/env_report.h"

namespace zt {

void query_openblas_env(EnvReport& r) {
#ifdef OPENBLAS_VERSION
  r.with_openblas = true;
  const char* cfg = openblas_get_config();
  const char* core = openblas_get_corename();
  r.openblas_config = std::string(cfg ? cfg : "?") + " (core " + (core ? core : "?") + ", " +
                      std::to_string(openblas_get_num_threads()) + " threads)";
#else
  r.with_openblas = false;
  r.openblas_config = "cblas.h is not OpenBLAS's: configuration unavailable";
#endif
}

}  // namespace zt
