// Helpers every Communicator implementation shares: argument checks that throw
// std::invalid_argument with the op, count and world size, names, and a thread-safe stats table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

#include "collectives/communicator.h"

namespace zt {

const char* reduce_op_name(ReduceOp op);

// Throws std::invalid_argument unless count splits into world_size equal shards
// ("... the caller must pad to a multiple of W").
void check_even_split(CommOp op, size_t count, int world_size);
// Throws std::invalid_argument for reductions that have no meaning (average of int64).
void check_reduction(CommOp op, DType t, ReduceOp r);
// Throws std::invalid_argument unless 0 <= root < world_size.
void check_root(int root, int world_size);
// all_to_all's arguments: count divides by W and the buffers do not overlap (std::invalid_argument).
void check_all_to_all(const void* send, const void* recv, size_t count, DType t, int world_size);
// Throws std::invalid_argument unless every owner is a rank and the total fits `limit` elements.
size_t check_segments(CommOp op, const std::vector<Segment>& segments, int world_size, size_t limit = SIZE_MAX);
// Algorithm bytes for one call, as nccl-tests counts them (see CommOpStats).
uint64_t comm_algorithm_bytes(CommOp op, size_t count, DType t);

// Per-op totals (and per op and message size) behind a mutex: add() from the thread that completes
// work, snapshot() from anyone.
class CommStatsTable {
 public:
  void add(CommOp op, uint64_t bytes, double seconds);
  CommStats snapshot() const;
  void reset();

 private:
  mutable std::mutex mu_;
  CommStats stats_;
};

}  // namespace zt
