// ZT_MPI_CHECK: the check for every MPI call, in base/check.h's one message format with the rank
// and, when given, the operation in progress; the job ends with MPI_Abort so no rank is left waiting.
#pragma once

#include <string>

#include "base/check.h"

namespace zt {

[[noreturn]] void mpi_check_failed(int err, const char* call, const char* file, int line, const std::string& context);

}  // namespace zt

// ZT_MPI_CHECK(call) or ZT_MPI_CHECK(call, context) where context is a std::string (op, sequence).
#define ZT_MPI_CHECK(...) ZT_CHECK_PICK_(__VA_ARGS__, ZT_MPI_CHECK_2_, ZT_MPI_CHECK_1_, unused)(__VA_ARGS__)
#define ZT_MPI_CHECK_1_(call) ZT_MPI_CHECK_2_(call, std::string())
#define ZT_MPI_CHECK_2_(call, context)                                                    \
  do {                                                                                    \
    int zt_mpi_err_ = (call);                                                             \
    if (zt_mpi_err_ != 0) ::zt::mpi_check_failed(zt_mpi_err_, #call, __FILE__, __LINE__, (context)); \
  } while (0)
