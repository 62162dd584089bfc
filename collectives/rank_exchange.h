// RankExchange: the one small exchange between ranks outside the step's collectives — start-up
// agreements (whether a start-up phase failed anywhere, the run's fingerprint, each rank's start-up
// lines), the step-boundary stop decision,
// a checkpoint's per-rank records — as all-gathers of int64 words over a Communicator, staged
// through one reused buffer of the backend whose memory the communicator takes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/communicator.h"
#include "kernels/backend.h"

namespace zt {

class RankExchange {
 public:
  // `staging`: the backend whose memory the communicator's buffers must live in (NCCL: device
  // memory); null when the communicator takes host buffers (MPI on the CPU, single rank).
  explicit RankExchange(Communicator& comm, Backend* staging = nullptr) : comm_(comm), staging_(staging) {}
  ~RankExchange();
  RankExchange(const RankExchange&) = delete;
  RankExchange& operator=(const RankExchange&) = delete;

  int rank() const { return comm_.rank(); }
  int world_size() const { return comm_.world_size(); }
  // Collective: every rank passes the same number n of words; returns W x n words, rank r's at
  // [r*n, r*n + n).
  std::vector<int64_t> all_gather_words(const std::vector<int64_t>& mine);
  // Collective: every rank passes a text of any length; returns all W texts, rank r's at [r]
  // (the lengths first, then every text padded to the longest, as words).
  std::vector<std::string> all_gather(const std::string& mine);
  // Collective: true on every rank when every rank passed true.
  bool all_true(bool mine);
  // Collective: true on every rank when any rank passed true.
  bool any_true(bool mine) { return !all_true(!mine); }

 private:
  Communicator& comm_;
  Backend* staging_;
  void* buf_ = nullptr;   // staging_'s memory, grown on demand, freed with the object
  size_t capacity_ = 0;   // bytes
};

}  // namespace zt
