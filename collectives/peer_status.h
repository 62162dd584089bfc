// PeerStatus: each rank's collective progress (the call in flight, the last one completed) and a
// side channel on which a rank whose collective timed out asks the others, to name who did not arrive.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "collectives/communicator.h"

namespace zt {

// MPI only. Owns a duplicate of COMM_WORLD used for nothing else and a responder thread that
// answers status queries with non-blocking calls (polled every few milliseconds, so it costs no
// core). A rank that is stopped (SIGSTOP), dead, or blocked in every thread gives no answer; a rank
// that is alive but not in the collective answers with its last completed call.
class PeerStatus {
 public:
  // Collective over COMM_WORLD: every rank constructs it at the same point.
  PeerStatus();
  ~PeerStatus();  // stops the responder, frees the communicator
  PeerStatus(const PeerStatus&) = delete;
  PeerStatus& operator=(const PeerStatus&) = delete;

  // The communication thread records each call as it starts and completes.
  void begin(uint64_t seq, CommOp op, size_t count);
  void end(uint64_t seq);

  // Asks every other rank for its progress and waits for the answers at most `answer_s` seconds.
  // Returns one sentence per group of ranks, naming first those that have not arrived at call
  // `seq` (no answer, or not in that call), e.g. "rank 1 did not answer within 2 s (stopped, or
  // hung with every thread blocked); rank 2 is waiting in all_reduce(1024) #3 too".
  std::string report(uint64_t seq, double answer_s = 2.0);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace zt
