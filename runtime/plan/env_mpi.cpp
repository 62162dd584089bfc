// The MPI library's version string for `zerotrain env` (compiled only with ZT_MPI).
// MPI_Get_library_version is one of the few calls MPI allows before MPI_Init.
// The C API only: keep Open MPI's and MPICH's deprecated C++ bindings out of this C++ file.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include "base/mpi_check.h"
#include <mpi.h>

#include <cstdio>
#include <cstdlib>

#include "runtime/plan/env_report.h"


namespace zt {

void query_mpi_env(EnvReport& r) {
  r.with_mpi = true;
  char buf[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  ZT_MPI_CHECK(MPI_Get_library_version(buf, &len));
  std::string s(buf, size_t(len > 0 ? len : 0));
  while (!s.empty() && (s.back() == '\n' || s.back() == '\0' || s.back() == ' ')) s.pop_back();
  r.mpi_library = s;
}

}  // namespace zt
