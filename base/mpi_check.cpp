// The MPI failure path: MPI's error string, the rank when MPI is up, base/check.h's message, then
// MPI_Abort (every rank of the job ends) before the local abort.
#include "base/mpi_check.h"

#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <cstdio>
#include <cstdlib>

namespace zt {

void mpi_check_failed(int err, const char* call, const char* file, int line, const std::string& context) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(err, msg, &len) != MPI_SUCCESS) len = std::snprintf(msg, sizeof msg, "error code %d", err);
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  CheckFailure f;
  f.library = "MPI";
  f.file = file;
  f.line = line;
  f.call = call;
  f.error = std::string(msg, size_t(len));
  f.context = context;
  f.hint = init ? "a peer rank may have died or called a different collective; rerun with ZT_COMM_DEBUG=1 to compare "
                  "calls across ranks"
                : "check that the mpirun and libmpi in use match the MPI zerotrain was built with";
  if (init && !fin) MPI_Comm_rank(MPI_COMM_WORLD, &f.rank);
  const std::string text = format_check_failure(f);
  std::fputs(text.c_str(), stderr);
  std::fflush(stderr);
  if (init && !fin) MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

}  // namespace zt
