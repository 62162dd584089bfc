// The NCCL failure path: NCCL's error string and last-error text, then base/check.h's message.
#include "base/nccl_check.h"

#include <string>

namespace zt {

void nccl_check_failed(ncclResult_t r, const char* call, const char* file, int line, const char* context) {
  CheckFailure f;
  f.library = "NCCL";
  f.file = file;
  f.line = line;
  f.call = call;
  f.error = ncclGetErrorString(r);
  const char* last = ncclGetLastError(nullptr);
  if (last && *last) f.error += std::string(" — ") + last;
  if (context) f.context = context;
  f.hint = "rerun with NCCL_DEBUG=WARN for NCCL's own diagnosis; a peer rank may have died or called a different collective";
  check_failed(f);
}

}  // namespace zt
