// The one failure path behind every library check macro (ZT_CUDA_CHECK, ZT_CUBLAS_CHECK,
// ZT_NCCL_CHECK, ZT_MPI_CHECK, ZT_URING_CHECK): one message format, then the whole job stops.
//
// Message (every library, every call site):
//   [rank R] FILE:LINE: LIBRARY call failed: CALL
//     error: the library's own error string
//     during: what the caller was doing            (only when given)
//     hint: what to try
// "[rank R] " is there when the caller knows its rank (MPI). After printing, the process aborts:
// a failed library call leaves a CUDA context, an NCCL communicator or an MPI job unusable, and the
// other ranks must not be left waiting (MPI's check calls MPI_Abort first).
#pragma once

#include <string>

namespace zt {

// The exit code of a process that ran out of memory (an allocation failed on the device or the
// host), so that a launcher (`zerotrain tune`) tells it from other failures by the code alone.
inline constexpr int kOutOfMemoryExit = 4;

struct CheckFailure {
  const char* library = "";  // "CUDA", "cuBLAS", "NCCL", "MPI", "io_uring"
  const char* file = "";
  int line = 0;
  const char* call = "";
  std::string error;    // the library's error string (and code)
  std::string context;  // optional: the operation in progress
  std::string hint;
  int rank = -1;        // -1: unknown
  bool out_of_memory = false;  // the library could not allocate: exit kOutOfMemoryExit, not abort
};

std::string format_check_failure(const CheckFailure& f);
// Prints format_check_failure(f) to stderr and aborts the process (exits with kOutOfMemoryExit
// when f.out_of_memory: the launcher then ends the job as for any failed rank).
[[noreturn]] void check_failed(const CheckFailure& f);

}  // namespace zt

// Optional second argument of a check macro: ZT_X_CHECK(call) or ZT_X_CHECK(call, extra).
#define ZT_CHECK_PICK_(_1, _2, NAME, ...) NAME
