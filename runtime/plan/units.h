// Human-readable sizes for plans and pre-flight messages: bytes as GiB with a chosen number of
// decimals, and parameter counts as "7.0B" / "124.4M".
#pragma once

#include <cstdint>
#include <string>

namespace zt {

inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string format_gib(double bytes, int decimals);  // "84.1 GiB" (decimals = 1)
std::string format_params(int64_t params);           // "7.0B", "124.4M", "52.3K", "900"

}  // namespace zt
