// read_process_memory / reset_process_peak over /proc/self/status and /proc/self/clear_refs.
#include "runtime/plan/process_memory.h"

#include <cstdio>
#include <fstream>
#include <sstream>

namespace zt {

ProcessMemory parse_process_status(const std::string& text) {
  ProcessMemory m;
  std::istringstream in(text);
  std::string line;
  int found = 0;
  while (std::getline(in, line)) {
    unsigned long long kb = 0;
    if (std::sscanf(line.c_str(), "VmRSS: %llu kB", &kb) == 1) m.rss = kb * 1024, ++found;
    else if (std::sscanf(line.c_str(), "VmHWM: %llu kB", &kb) == 1) m.hwm = kb * 1024, ++found;
    else if (std::sscanf(line.c_str(), "RssShmem: %llu kB", &kb) == 1) m.rss_shmem = kb * 1024;
  }
  m.known = found == 2;
  return m;
}

ProcessMemory read_process_memory() {
  std::ifstream f("/proc/self/status");
  if (!f) return {};
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_process_status(ss.str());
}

bool reset_process_peak() {
  std::FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (!f) return false;
  const bool ok = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && ok;
}

}  // namespace zt
