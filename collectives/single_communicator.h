// SingleCommunicator: the world-size-1 Communicator (no MPI, no GPU): every collective is a local
// copy (or the one-rank reduction), completed before the call returns.
#pragma once

#include "collectives/comm_common.h"
#include "collectives/communicator.h"

namespace zt {

class SingleCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  std::string name() const override { return "single"; }

  CommHandlePtr all_reduce_async(const void* send, void* recv, size_t count, DType t, ReduceOp op) override;
  CommHandlePtr reduce_scatter_async(const void* send, void* recv, size_t count, DType t, ReduceOp op) override;
  CommHandlePtr all_gather_async(const void* send, void* recv, size_t count, DType t) override;
  CommHandlePtr broadcast_async(void* buf, size_t count, DType t, int root) override;
  CommHandlePtr all_to_all_async(const void* send, void* recv, size_t count, DType t) override;
  CommHandlePtr barrier_async() override;
  CommHandlePtr reduce_scatter_segments_async(const std::vector<Segment>& segments, DType t, ReduceOp op) override;
  CommHandlePtr all_reduce_segments_async(const std::vector<Segment>& segments, DType t, ReduceOp op) override;
  CommHandlePtr all_gather_segments_async(const std::vector<Segment>& segments, DType t) override;

  // A world of one splits into a world of one.
  std::unique_ptr<Communicator> split(int color, int key) override;
  CommStats stats() const override { return stats_.snapshot(); }
  void reset_stats() override { stats_.reset(); }

 private:
  CommHandlePtr fold_segments(CommOp op_kind, const std::vector<Segment>& segments, DType t, ReduceOp op);
  CommStatsTable stats_;
};

}  // namespace zt
