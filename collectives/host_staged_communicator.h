// HostStagedCommunicator: a host-buffer Communicator (MPI) used with backend memory, so that several
// ranks can share one GPU (NCCL refuses that): input to pinned host memory, collective, result back.
#pragma once

#include <memory>
#include <string>

#include "collectives/comm_options.h"
#include "collectives/communicator.h"
#include "kernels/backend.h"
#include "offload/pinned_memory.h"

namespace zt {

// Every collective takes backend memory (Backend::alloc) and, in order:
//   1. copies its input into a pinned host buffer on the backend's copy lane (ordered after every op
//      issued to the backend before the call) and waits for that copy;
//   2. runs the inner communicator's collective on the host buffers (asynchronously, in issue order);
//   3. in the handle's wait() (or the done() that first sees it complete) copies the result into
//      the caller's buffer on the copy lane and waits for it, after which later backend ops see it.
// The results are the inner communicator's, bit for bit (the rank-order reduction of the MPI
// communicator included). In-place and out-of-place calls are both supported; on the host every
// call runs in place. A handle dropped without wait() returns its buffer only once the inner
// collective is done, and never copies back.
//
// Staging is bounded: two host buffers (slots) of at most half the cap each (CommOptions'
// buffer_bytes, ZT_COMM_BUFFER_MB; after reserve_buffers(L), comm_chunk_bytes(L, cap) each, the MPI
// communicator's own formula). A call larger than a slot is carried out as several inner collectives
// of at most a slot each (all-reduce and broadcast: consecutive runs; reduce-scatter and all-gather:
// the same run of every rank's shard; segment lists: cut into runs, segments split where needed,
// owners kept), so the comms statistics count each of them. Every element is still reduced by the
// inner communicator in rank order, so results are bitwise those of one call. When both slots are
// busy the call first completes the oldest staged collective in flight (waiting for it and copying
// its result back), in issue order, so every rank issues the same inner calls in the same order.
//
// Calls, waits and polls must come from the thread that drives the backend (the engine's), since
// they issue backend copies. stats() are the inner communicator's (busy time excludes the copies).
class HostStagedCommunicator final : public Communicator {
 public:
  // `inner` works on host memory; `backend` owns the memory callers pass. pin.pin_memory = false
  // stages through pageable memory (a CPU backend, whose "device" is host memory, gains nothing).
  HostStagedCommunicator(std::unique_ptr<Communicator> inner, Backend& backend,
                         offload::PinnedAllocatorOptions pin = {},
                         uint64_t staging_cap = CommOptions{}.buffer_bytes);
  ~HostStagedCommunicator() override;

  int rank() const override { return inner_->rank(); }
  int world_size() const override { return inner_->world_size(); }
  std::string name() const override { return inner_->name() + "-staged"; }

  CommHandlePtr all_reduce_async(const void* send, void* recv, size_t count, DType t, ReduceOp op) override;
  CommHandlePtr reduce_scatter_async(const void* send, void* recv, size_t count, DType t, ReduceOp op) override;
  CommHandlePtr all_gather_async(const void* send, void* recv, size_t count, DType t) override;
  CommHandlePtr broadcast_async(void* buf, size_t count, DType t, int root) override;
  CommHandlePtr all_to_all_async(const void* send, void* recv, size_t count, DType t) override;
  // Bucketed forms: the segments packed into one host buffer, the inner communicator's segment op.
  CommHandlePtr reduce_scatter_segments_async(const std::vector<Segment>& segments, DType t, ReduceOp op) override;
  CommHandlePtr all_reduce_segments_async(const std::vector<Segment>& segments, DType t, ReduceOp op) override;
  CommHandlePtr all_gather_segments_async(const std::vector<Segment>& segments, DType t) override;
  CommHandlePtr barrier_async() override { return inner_->barrier_async(); }

  void set_compute_stream(void* stream) override { inner_->set_compute_stream(stream); }
  // The inner communicator's split, staged through its own slots on the same backend.
  std::unique_ptr<Communicator> split(int color, int key) override;
  void set_node_layout(const std::vector<int>& node_of_rank) override { inner_->set_node_layout(node_of_rank); }
  bool node_aware() const override { return inner_->node_aware(); }
  CommStats stats() const override { return inner_->stats(); }
  void reset_stats() override { inner_->reset_stats(); }

  // Host bytes the two staging slots hold now (at most the cap).
  size_t staging_bytes() const;
  // The most bytes one inner collective stages (a slot's size).
  size_t staging_chunk_bytes() const;
  // The inner communicator's working buffers and the staging slots: held now, and what
  // reserve_buffers(L) holds (the inner's plus 2 * comm_chunk_bytes(L, cap)).
  uint64_t buffer_bytes() const override { return inner_->buffer_bytes() + staging_bytes(); }
  uint64_t buffer_bytes_for(uint64_t largest_call_bytes) const override;
  void reserve_buffers(uint64_t largest_call_bytes) override;

  class Staging;

 private:
  CommHandlePtr segments_async(CommOp op, const std::vector<Segment>& segments, DType t, ReduceOp rop);
  std::unique_ptr<Communicator> inner_;
  Backend& backend_;
  std::shared_ptr<Staging> staging_;
  uint64_t cap_;
  offload::PinnedAllocatorOptions pin_;
};

}  // namespace zt
