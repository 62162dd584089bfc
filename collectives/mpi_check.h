// ZT_MPI_CHECK: the one check for MPI return codes. On failure it prints file:line, the call, MPI's
// error string, the context (op and sequence number when known) and a hint, then aborts the job.
#pragma once

#include <string>

namespace zt {

[[noreturn]] void mpi_check_failed(const char* file, int line, const char* call, int err, const std::string& context);

}  // namespace zt

#define ZT_MPI_CHECK_CTX(call, context)                                             \
  do {                                                                             \
    int zt_mpi_err_ = (call);                                                      \
    if (zt_mpi_err_ != 0) ::zt::mpi_check_failed(__FILE__, __LINE__, #call, zt_mpi_err_, (context)); \
  } while (0)
#define ZT_MPI_CHECK(call) ZT_MPI_CHECK_CTX(call, std::string())
