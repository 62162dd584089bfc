// A deliberate leak, built only in the sanitizer job (ZT_SANITIZE): its test passes only when
// LeakSanitizer reports it, which holds only while leak checking is on for the unit tests
// (scripts/sanitize.sh). If it were turned off there, this test would fail.
#include <cstdio>
#include <cstring>

int main() {
  char* volatile lost = new char[4096];
  std::memset(lost, 1, 4096);
  lost = nullptr;
  std::puts("leak_canary: leaked 4096 bytes");
  return 0;
}
