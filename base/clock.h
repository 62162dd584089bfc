// Clock and seconds_since: the one monotonic clock the runtime times its work with.
#pragma once

#include <chrono>

namespace zt {

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace zt
