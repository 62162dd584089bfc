// ZT_URING_CHECK: the check for every liburing set-up call (they return -errno), in base/check.h's
// one message format: the errno text and the call site's hint, then abort.
#pragma once

#include <cstring>
#include <string>

#include "base/check.h"

#define ZT_URING_CHECK(call_, hint_)                                                        \
  do {                                                                                    \
    int zt_uring_rc_ = (call_);                                                            \
    if (zt_uring_rc_ < 0) {                                                               \
      ::zt::CheckFailure zt_f_;                                                           \
      zt_f_.library = "io_uring";                                                         \
      zt_f_.file = __FILE__;                                                              \
      zt_f_.line = __LINE__;                                                              \
      zt_f_.call = #call_;                                                                 \
      zt_f_.error = std::strerror(-zt_uring_rc_);                                         \
      zt_f_.hint = (hint_);                                                                \
      ::zt::check_failed(zt_f_);                                                          \
    }                                                                                     \
  } while (0)
