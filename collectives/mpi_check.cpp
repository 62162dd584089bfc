// ZT_MPI_CHECK failure path: print the call, MPI's error string and context, then MPI_Abort.
#include "collectives/mpi_check.h"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>

namespace zt {

void mpi_check_failed(const char* file, int line, const char* call, int err, const std::string& context) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(err, msg, &len) != MPI_SUCCESS) len = std::snprintf(msg, sizeof msg, "error code %d", err);
  int rank = -1, init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::fprintf(stderr,
               "[rank %d] %s:%d: MPI call failed: %s\n  error: %.*s%s%s\n  hint: a peer rank may have died or "
               "called a different collective; rerun with ZT_COMM_DEBUG=1 to compare calls across ranks\n",
               rank, file, line, call, len, msg, context.empty() ? "" : "\n  during: ", context.c_str());
  std::fflush(stderr);
  if (init && !fin) MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

}  // namespace zt
