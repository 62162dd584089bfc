// WriterPacer: the thread's CPU clock against the wall clock since start(); the difference the
// share allows is slept off in nanosleep, which costs no CPU.
#include "runtime/checkpoint/writer_pacer.h"

#include <time.h>

#include <cerrno>
#include <cmath>

namespace zt::ckpt {

namespace {

double now_s(clockid_t c) {
  timespec t{};
  ::clock_gettime(c, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

}  // namespace

WriterPacer::WriterPacer(double share) : share_(share) {}

void WriterPacer::start() {
  a_ = PaceAccount{};
  if (!active()) return;
  cpu0_ = now_s(CLOCK_THREAD_CPUTIME_ID);
  wall0_ = now_s(CLOCK_MONOTONIC);
}

void WriterPacer::sleep_owed(double at_least_s) {
  const double cpu = now_s(CLOCK_THREAD_CPUTIME_ID) - cpu0_;
  const double wall = now_s(CLOCK_MONOTONIC) - wall0_;
  const double owed = cpu / share_ - wall;  // wall seconds still to pass before cpu <= share × wall
  if (owed <= 0 || owed < at_least_s) return;
  timespec t{};
  t.tv_sec = time_t(owed);
  t.tv_nsec = long((owed - std::floor(owed)) * 1e9);
  while (::nanosleep(&t, &t) != 0 && errno == EINTR) {
  }
  ++a_.sleeps;
  a_.slept_s += owed;
}

void WriterPacer::after(int64_t bytes) {
  a_.bytes += bytes;
  ++a_.checks;
  if (active()) sleep_owed(1e-3);
}

void WriterPacer::finish() {
  if (!active()) return;
  sleep_owed(0);
  a_.cpu_s = now_s(CLOCK_THREAD_CPUTIME_ID) - cpu0_;
  a_.wall_s = now_s(CLOCK_MONOTONIC) - wall0_;
}

}  // namespace zt::ckpt
