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

  // The reductions: each element's sum over one rank is its own value, rounded as the MPI path
  // rounds a single contribution; a reduce-scatter and an all-reduce are the same fold here.
  CommHandlePtr all_reduce_async(const void* send, void* recv, size_t count, DType t, ReduceOp op) override {
    return fold(CommOp::AllReduce, {{const_cast<void*>(send), count, 0}}, recv, t, op);
  }
  CommHandlePtr reduce_scatter_async(const void* send, void* recv, size_t count, DType t, ReduceOp op) override {
    return fold(CommOp::ReduceScatter, {{const_cast<void*>(send), count, 0}}, recv, t, op);
  }
  CommHandlePtr reduce_scatter_segments_async(const std::vector<Segment>& segments, DType t, ReduceOp op) override {
    return fold(CommOp::ReduceScatter, segments, nullptr, t, op);
  }
  CommHandlePtr all_reduce_segments_async(const std::vector<Segment>& segments, DType t, ReduceOp op) override {
    return fold(CommOp::AllReduce, segments, nullptr, t, op);
  }
  CommHandlePtr all_gather_async(const void* send, void* recv, size_t count, DType t) override;
  CommHandlePtr broadcast_async(void* buf, size_t count, DType t, int root) override;
  CommHandlePtr all_to_all_async(const void* send, void* recv, size_t count, DType t) override;
  CommHandlePtr barrier_async() override;
  CommHandlePtr all_gather_segments_async(const std::vector<Segment>& segments, DType t) override;

  // A world of one splits into a world of one.
  std::unique_ptr<Communicator> split(int color, int key) override;
  CommStats stats() const override { return stats_.snapshot(); }
  void reset_stats() override { stats_.reset(); }

 private:
  // Folds each segment into itself, or (recv set: a plain call) the one segment into recv.
  CommHandlePtr fold(CommOp kind, const std::vector<Segment>& segments, void* recv, DType t, ReduceOp op);
  CommStatsTable stats_;
};

}  // namespace zt
