// Size formatting shared by the plan table, the env report and pre-flight messages.
#include "runtime/plan/units.h"

#include <cstdio>

namespace zt {

std::string format_gib(double bytes, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f GiB", decimals, bytes / kGiB);
  return buf;
}

std::string format_params(int64_t params) {
  char buf[64];
  const double p = double(params);
  if (p >= 1e9) std::snprintf(buf, sizeof buf, "%.1fB", p / 1e9);
  else if (p >= 1e6) std::snprintf(buf, sizeof buf, "%.1fM", p / 1e6);
  else if (p >= 1e3) std::snprintf(buf, sizeof buf, "%.1fK", p / 1e3);
  else std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(params));
  return buf;
}

}  // namespace zt
