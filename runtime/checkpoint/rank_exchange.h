// RankExchange: the small agreements a checkpoint needs across ranks (every rank's short record,
// all-gathered) over the run's Communicator, staged through backend memory where it needs that.
#pragma once

#include <string>
#include <vector>

#include "collectives/communicator.h"
#include "kernels/backend.h"

namespace zt::ckpt {

class RankExchange {
 public:
  // `staging`: the backend whose memory the communicator's buffers live in (NCCL: device memory);
  // null when the communicator takes host buffers (MPI, single).
  RankExchange(Communicator& comm, Backend* staging = nullptr) : comm_(comm), staging_(staging) {}
  int rank() const { return comm_.rank(); }
  int world_size() const { return comm_.world_size(); }
  // Collective: every rank passes its record; all get every rank's, in rank order.
  std::vector<std::string> all_gather(const std::string& mine);
  // Collective: true on every rank when every rank passed true.
  bool all_true(bool mine);

 private:
  void gather_i64(std::vector<int64_t>& buf);  // in place, W equal slices
  Communicator& comm_;
  Backend* staging_;
};

}  // namespace zt::ckpt
