// ZT_NCCL_CHECK: the check for every NCCL call, in base/check.h's one message format (the error
// string plus NCCL's last-error text), then abort.
#pragma once

#include <nccl.h>

#include "base/check.h"

namespace zt {

[[noreturn]] void nccl_check_failed(ncclResult_t r, const char* call, const char* file, int line, const char* context);

}  // namespace zt

// ZT_NCCL_CHECK(call) or ZT_NCCL_CHECK(call, "what was in progress"). ncclInProgress (non-blocking
// communicators) is not a failure.
#define ZT_NCCL_CHECK(...) ZT_CHECK_PICK_(__VA_ARGS__, ZT_NCCL_CHECK_2_, ZT_NCCL_CHECK_1_, unused)(__VA_ARGS__)
#define ZT_NCCL_CHECK_1_(call) ZT_NCCL_CHECK_2_(call, nullptr)
#define ZT_NCCL_CHECK_2_(call, context)                                                   \
  do {                                                                                    \
    ncclResult_t zt_nccl_err_ = (call);                                                   \
    if (zt_nccl_err_ != ncclSuccess && zt_nccl_err_ != ncclInProgress)                    \
      ::zt::nccl_check_failed(zt_nccl_err_, #call, __FILE__, __LINE__, context);         \
  } while (0)
