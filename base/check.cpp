// format_check_failure and check_failed: the message every library check prints before the abort.
#include "base/check.h"

#include <cstdio>
#include <cstdlib>

namespace zt {

std::string format_check_failure(const CheckFailure& f) {
  std::string s;
  if (f.rank >= 0) s += "[rank " + std::to_string(f.rank) + "] ";
  s += std::string(f.file) + ":" + std::to_string(f.line) + ": " + f.library + " call failed: " + f.call + "\n";
  s += "  error: " + f.error + "\n";
  if (!f.context.empty()) s += "  during: " + f.context + "\n";
  s += "  hint: " + (f.hint.empty() ? std::string("see the library's documentation for this error") : f.hint) + "\n";
  return s;
}

void check_failed(const CheckFailure& f) {
  const std::string msg = format_check_failure(f);
  std::fputs(msg.c_str(), stderr);
  std::fflush(stderr);
  if (f.out_of_memory) std::_Exit(kOutOfMemoryExit);
  std::abort();
}

}  // namespace zt
