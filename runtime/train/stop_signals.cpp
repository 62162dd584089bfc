// StopSignals: the handler only records the signal (and says once, with write(2), that the run
// will stop at the step boundary, on the rank chosen to speak); the training loop reads it between steps.
#include "runtime/train/stop_signals.h"

#include <signal.h>
#include <unistd.h>

#include <csignal>

namespace zt {

namespace {

volatile std::sig_atomic_t g_pending = 0;
volatile std::sig_atomic_t g_announce = 1;
struct sigaction g_old_term, g_old_int;

void on_stop_signal(int sig) {
  if (g_pending != 0) {  // the second one: the default action, now
    ::signal(sig, SIG_DFL);
    ::raise(sig);
    return;
  }
  g_pending = sig;
  static const char msg[] =
      "zerotrain: stop signal received: every rank stops at the end of the current step (send it again to stop "
      "at once)\n";
  if (!g_announce) return;
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
}

}  // namespace

StopSignals::StopSignals(bool announce) {
  g_pending = 0;
  g_announce = announce;
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // blocking calls (MPI, I/O) go on; the loop checks between steps
  sigaction(SIGTERM, &sa, &g_old_term);
  sigaction(SIGINT, &sa, &g_old_int);
}

StopSignals::~StopSignals() {
  sigaction(SIGTERM, &g_old_term, nullptr);
  sigaction(SIGINT, &g_old_int, nullptr);
}

int StopSignals::pending() const { return int(g_pending); }

const char* stop_signal_name(int sig) {
  switch (sig) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    default: return "a stop signal";
  }
}

}  // namespace zt
