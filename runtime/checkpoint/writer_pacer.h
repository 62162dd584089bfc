// WriterPacer: holds the checkpoint writer thread's CPU time under a share of one core that the
// user sets, by sleeping between checksum blocks, and keeps its own account (bytes, sleeps, the
// CPU and wall seconds it measured) so that a report or a test can see what it did.
#pragma once

#include <cstdint>

namespace zt::ckpt {

struct PaceAccount {
  int64_t bytes = 0;     // bytes the paced pass went over
  int64_t checks = 0;    // after() calls
  int64_t sleeps = 0;    // sleeps taken
  double slept_s = 0;    // seconds asked of nanosleep in all
  double cpu_s = 0;      // the thread's CPU seconds from start() to finish()
  double wall_s = 0;     // wall seconds from start() to finish(), the sleeps included
};

class WriterPacer {
 public:
  // share: at most this fraction of one core, in (0, 1]; 1 never sleeps (and reads no clocks).
  explicit WriterPacer(double share);
  bool active() const { return share_ < 1.0; }
  void start();                 // on the paced thread: both clocks from here
  void after(int64_t bytes);    // after each block: sleeps while CPU > share × wall (by 1 ms or more)
  void finish();                // the last sleep owed (any length), then the account is closed
  const PaceAccount& account() const { return a_; }

 private:
  void sleep_owed(double at_least_s);
  double share_;
  double cpu0_ = 0, wall0_ = 0;
  PaceAccount a_;
};

}  // namespace zt::ckpt
