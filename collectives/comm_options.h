// CommOptions: settings shared by every Communicator implementation (watchdog timeout, debug mode,
// the cap on the communicator's own working buffers) and how they are read from the environment
// (ZT_COMM_TIMEOUT_S, ZT_COMM_DEBUG, ZT_COMM_BUFFER_MB); and the size of those working buffers, one
// formula for the communicator and for the memory plan.
#pragma once

#include <algorithm>
#include <cstdint>

namespace zt {

struct CommOptions {
  // A collective that has not completed this many seconds after it started aborts the whole job
  // with a message naming the op, its element count, its sequence number and the rank.
  double timeout_s = 300.0;
  // Before every call, all ranks exchange a fingerprint (op, count, dtype, reduction/root, sequence
  // number) and abort with a message naming both calls when they differ. Costs one small allgather.
  bool debug = false;
  // The most bytes a host communicator keeps for its own working buffers (the MPI communicator's
  // pack and receive buffers, half each). A collective larger than half of it is carried out in
  // chunks, each reduced in rank order as a whole call would be, so results do not change.
  uint64_t buffer_bytes = uint64_t(64) << 20;

  // Defaults overridden by ZT_COMM_TIMEOUT_S (seconds, > 0), ZT_COMM_DEBUG (1/0) and
  // ZT_COMM_BUFFER_MB (MiB, ≥ 1). A malformed value throws std::invalid_argument naming the
  // variable, the value and what is accepted.
  static CommOptions from_env();
};

// The smallest chunk a communicator works in (so that every rank has at least one element of
// every dtype to reduce at any world size the project runs).
inline constexpr uint64_t kMinCommChunkBytes = uint64_t(64) << 10;

// Bytes of each of the MPI communicator's two working buffers when the largest collective it will
// carry is `largest_call_bytes`: the call's own size up to half the cap (at least the minimum chunk).
inline uint64_t comm_chunk_bytes(uint64_t largest_call_bytes, uint64_t cap) {
  const uint64_t half = std::max(cap / 2, kMinCommChunkBytes);
  return std::min(half, std::max(largest_call_bytes, kMinCommChunkBytes));
}

// What an MPI communicator holds for calls of up to `largest_call_bytes` (both buffers). A job of
// one rank runs on the single communicator, which holds none.
inline uint64_t mpi_buffer_bytes(uint64_t largest_call_bytes, uint64_t cap) {
  return 2 * comm_chunk_bytes(largest_call_bytes, cap);
}

}  // namespace zt
