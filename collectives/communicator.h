// Communicator: the collectives ZeRO needs (all-reduce, reduce-scatter, all-gather, all-to-all,
// broadcast, barrier) with async handles that complete in issue order, and per-op byte accounting.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/dtype.h"

namespace zt {

enum class ReduceOp { Sum, Avg };
enum class CommOp { AllReduce, ReduceScatter, AllGather, Broadcast, Barrier, AllToAll };
constexpr int kCommOpCount = 6;
const char* comm_op_name(CommOp op);

// A pending collective. wait() blocks until it completed (and rethrows its failure); done() polls.
class CommHandle {
 public:
  virtual ~CommHandle() = default;
  virtual void wait() = 0;
  virtual bool done() = 0;
};
using CommHandlePtr = std::shared_ptr<CommHandle>;

// One piece of a bucket: `count` elements at `data` in this process's buffer, owned by rank `owner`
// (reduce-scatter: the owner receives the sum; all-gather: the owner's values are the source; all-
// reduce ignores it). A bucket is a list of segments that may come from several buffers (a
// gradient bucket spanning units, or a unit split into buckets); every rank passes a list of the
// same shape (counts and owners), each with its own pointers.
struct Segment {
  void* data = nullptr;
  size_t count = 0;
  int owner = 0;
};

// Per-op totals since construction (or reset_stats()). Bytes are "algorithm bytes" as nccl-tests
// counts them for this rank: all-reduce = buffer bytes; reduce-scatter and all-gather = full
// (un-sharded) buffer bytes; broadcast = buffer bytes; all-to-all = the send buffer's bytes.
struct CommOpStats {
  uint64_t calls = 0;
  uint64_t bytes = 0;
  double busy_seconds = 0;  // time from start to completion, as seen by the communication thread/stream
};
// The same calls split by message size (algorithm bytes of one call): the comms logger's table.
struct CommSizeStats {
  uint64_t calls = 0;
  double busy_seconds = 0;
};
struct CommStats {
  CommOpStats op[kCommOpCount];
  std::map<std::pair<CommOp, uint64_t>, CommSizeStats> by_size;  // (op, bytes of one call)
  const CommOpStats& operator[](CommOp o) const { return op[int(o)]; }
};

// Buffers are host memory for the MPI implementation and device memory for NCCL.
// Shard layout (ZeRO's): for world size W and count elements, rank r's shard is
// [r*count/W, (r+1)*count/W). count must divide by W (else std::invalid_argument; the engine pads).
class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  virtual std::string name() const = 0;  // "mpi", "nccl", "single"

  // In-place when send == recv. count = elements of the full buffer.
  virtual CommHandlePtr all_reduce_async(const void* send, void* recv, size_t count, DType t, ReduceOp op) = 0;
  // send holds count elements; recv receives this rank's count/W elements. In-place form: pass
  // recv == (char*)send + rank*count/W*elem (the shard inside the full buffer).
  virtual CommHandlePtr reduce_scatter_async(const void* send, void* recv, size_t count, DType t,
                                             ReduceOp op) = 0;
  // send holds count/W elements; recv receives count. In-place when send is recv's own shard.
  virtual CommHandlePtr all_gather_async(const void* send, void* recv, size_t count, DType t) = 0;
  virtual CommHandlePtr broadcast_async(void* buf, size_t count, DType t, int root) = 0;
  // send holds count elements in W equal chunks: chunk j goes to rank j; recv (count elements, not
  // overlapping send) receives chunk i from rank i at i·count/W. count must divide by W. Bytes move
  // unchanged (no reduction). Implementations without it throw std::logic_error naming themselves.
  virtual CommHandlePtr all_to_all_async(const void* send, void* recv, size_t count, DType t);

  // Bucketed collectives: ONE call over a list of segments, counted as one call of the op with
  // Σ count elements (algorithm bytes as above). In place, with the same reduction as the plain ops
  // (MPI: every rank's contribution summed element by element in rank order, 16-bit rounded once),
  // so how a buffer is cut into segments never changes a result.
  //   reduce_scatter_segments: each segment's owner receives the sum of every rank's copy; the other
  //     ranks' copies of that segment keep their own values.
  //   all_reduce_segments: every rank receives the sum in every segment.
  //   all_gather_segments: every rank's copy of each segment receives its owner's values.
  virtual CommHandlePtr reduce_scatter_segments_async(const std::vector<Segment>& segments, DType t,
                                                      ReduceOp op) = 0;
  virtual CommHandlePtr all_reduce_segments_async(const std::vector<Segment>& segments, DType t, ReduceOp op) = 0;
  virtual CommHandlePtr all_gather_segments_async(const std::vector<Segment>& segments, DType t) = 0;
  virtual CommHandlePtr barrier_async() = 0;

  // Blocking forms.
  void all_reduce(const void* s, void* r, size_t n, DType t, ReduceOp op) { blocking([&] { return all_reduce_async(s, r, n, t, op); }); }
  void reduce_scatter(const void* s, void* r, size_t n, DType t, ReduceOp op) { blocking([&] { return reduce_scatter_async(s, r, n, t, op); }); }
  void all_gather(const void* s, void* r, size_t n, DType t) { blocking([&] { return all_gather_async(s, r, n, t); }); }
  void broadcast(void* b, size_t n, DType t, int root) { blocking([&] { return broadcast_async(b, n, t, root); }); }
  void all_to_all(const void* s, void* r, size_t n, DType t) { blocking([&] { return all_to_all_async(s, r, n, t); }); }
  void barrier() { blocking([&] { return barrier_async(); }); }

  // A communicator over the ranks that pass the same `color` (>= 0), ranked by `key` and then by
  // this communicator's rank, as MPI_Comm_split: the node and cross-node groups of a topology.
  // Collective over this communicator; call it with no collective in flight. Its stats start at 0
  // and are its own. Implementations that cannot split throw std::logic_error naming themselves.
  virtual std::unique_ptr<Communicator> split(int color, int key);

  // Where this communicator's ranks sit: node_of_rank[r] is rank r's node (any integers; equal means
  // one node). Collective over this communicator, with no collective in flight; every rank passes the
  // same list (std::invalid_argument otherwise). Groups split afterwards inherit their members' nodes.
  // A node-aware implementation (the MPI communicator) then runs every collective over several nodes
  // in two levels, inside each node first and then across nodes with only what must cross, and says
  // so (node_aware(): LinkModel::Kind::NodeAware counts its bytes); the others ignore it and
  // their libraries choose (NCCL: rings, LinkModel::Kind::Ring).
  virtual void set_node_layout(const std::vector<int>& node_of_rank) {}
  virtual bool node_aware() const { return false; }

  // Device implementations order every collective after the work already queued on this stream
  // (a cudaStream_t); host implementations ignore it.
  virtual void set_compute_stream(void* stream) {}

  virtual CommStats stats() const = 0;
  virtual void reset_stats() = 0;

  // The communicator's own working buffers (host memory: the MPI communicator's pack and receive
  // buffers). buffer_bytes(): held now; buffer_bytes_for(L): what reserve_buffers(L) holds.
  // reserve_buffers(L) allocates them now for calls of up to L bytes (at most CommOptions'
  // buffer_bytes cap), so that a memory ledger counts what is held; afterwards they never grow and
  // larger calls run in chunks. Communicators that keep none (single; NCCL) answer 0.
  virtual uint64_t buffer_bytes() const { return 0; }
  virtual uint64_t buffer_bytes_for(uint64_t largest_call_bytes) const { return 0; }
  virtual void reserve_buffers(uint64_t largest_call_bytes) {}
  // The communicator's own buffers in device memory, as far as they can be known: NCCL does not
  // report its buffers, so the NCCL communicator answers the growth of the driver's used device
  // memory across ncclCommInitRank (channels, FIFOs, proxy buffers NCCL sets up at init; buffers it
  // allocates later, on a first use of another algorithm, are not seen). Host communicators: 0.
  virtual uint64_t device_buffer_bytes() const { return 0; }

 protected:
  // A blocking call: `issue` queues it and the caller waits. An implementation with a communication
  // thread may run it on the calling thread instead of waking that thread (MpiCommunicator does).
  virtual void blocking(const std::function<CommHandlePtr()>& issue) { issue()->wait(); }
};

}  // namespace zt
