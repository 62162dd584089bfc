// MpiCommunicator: collectives on host buffers over MPI, on a private duplicate of COMM_WORLD.
// Callers enqueue work and get handles; the calls run one at a time in issue order, on the
// communication thread, or on a blocking caller's own thread when nothing runs before it.
#pragma once

#include <memory>

#include "collectives/bootstrap.h"
#include "collectives/comm_options.h"
#include "collectives/communicator.h"

namespace zt {

// Reductions (all-reduce, reduce-scatter) are deterministic: every rank's contribution to an element
// is summed in rank order 0..W-1 in fp32 (see fixed_order_reduce.h); MPI only moves bytes
// (MPI_Alltoall[v] then MPI_Allgather[v]), so results do not depend on MPI's algorithm choice and
// are identical on every rank. all_reduce accepts any count; reduce_scatter/all_gather need count
// divisible by W. Counts above INT_MAX elements are rejected (split into buckets). The pack and
// receive buffers are at most half of CommOptions::buffer_bytes each; a reduction or bucketed call
// larger than one buffer is moved and reduced chunk by chunk (the same bits: each element is still
// folded in rank order).
class MpiCommunicator final : public Communicator {
 public:
  // Collective over COMM_WORLD: every rank constructs it at the same point. Throws
  // std::runtime_error when boot has no active MPI (use SingleCommunicator / make_communicator).
  explicit MpiCommunicator(const Bootstrap& boot, CommOptions options = CommOptions::from_env());
  ~MpiCommunicator() override;  // finishes queued work, then joins its threads

  int rank() const override;
  int world_size() const override;
  std::string name() const override { return "mpi"; }

  CommHandlePtr all_reduce_async(const void* send, void* recv, size_t count, DType t, ReduceOp op) override;
  CommHandlePtr reduce_scatter_async(const void* send, void* recv, size_t count, DType t, ReduceOp op) override;
  CommHandlePtr all_gather_async(const void* send, void* recv, size_t count, DType t) override;
  CommHandlePtr broadcast_async(void* buf, size_t count, DType t, int root) override;
  CommHandlePtr all_to_all_async(const void* send, void* recv, size_t count, DType t) override;
  CommHandlePtr barrier_async() override;
  CommHandlePtr reduce_scatter_segments_async(const std::vector<Segment>& segments, DType t, ReduceOp op) override;
  CommHandlePtr all_reduce_segments_async(const std::vector<Segment>& segments, DType t, ReduceOp op) override;
  CommHandlePtr all_gather_segments_async(const std::vector<Segment>& segments, DType t) override;

  // MPI_Comm_split of this communicator's own, after every queued call has completed. The group has
  // its own communication and watchdog threads; its timeout messages give ranks within the group.
  std::unique_ptr<Communicator> split(int color, int key) override;
  // Over several nodes every collective runs in two levels where the group allows it (as many ranks
  // on each node, node-contiguous: GroupLayout::two_level), else straight from rank to rank; the
  // reductions then fold each node's contributions in local order and the node partials in node
  // order (on one node that is rank order). collectives/README.md, "Across nodes".
  void set_node_layout(const std::vector<int>& node_of_rank) override;
  bool node_aware() const override { return true; }
  CommStats stats() const override;
  void reset_stats() override;
  uint64_t buffer_bytes() const override;
  uint64_t buffer_bytes_for(uint64_t largest_call_bytes) const override;
  void reserve_buffers(uint64_t largest_call_bytes) override;

  // Applies to calls issued afterwards. Every rank must switch debug mode at the same call.
  void set_timeout_s(double seconds);
  void set_debug(bool on);

  struct Impl;

 protected:
  void blocking(const std::function<CommHandlePtr()>& issue) override;

 private:
  explicit MpiCommunicator(std::unique_ptr<Impl> impl);  // split(): impl's comm is set
  void start();  // the communicator's threads, once impl_->comm is set
  std::unique_ptr<Impl> impl_;
};

}  // namespace zt
