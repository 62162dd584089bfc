// World-size-1 collectives: copies through the same rank-order reduction the MPI path uses, so a
// one-rank run gives the same bits (Avg divides by 1; 16-bit values pass through one rounding).
#include "collectives/single_communicator.h"

#include <chrono>
#include <cstring>

#include "collectives/fixed_order_reduce.h"

namespace zt {
namespace {

class DoneHandle final : public CommHandle {
 public:
  void wait() override {}
  bool done() override { return true; }
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

CommHandlePtr SingleCommunicator::all_gather_async(const void* send, void* recv, size_t count, DType t) {
  auto t0 = std::chrono::steady_clock::now();
  if (send != recv && count) std::memmove(recv, send, count * dtype_size(t));
  stats_.add(CommOp::AllGather, comm_algorithm_bytes(CommOp::AllGather, count, t), seconds_since(t0));
  return std::make_shared<DoneHandle>();
}

CommHandlePtr SingleCommunicator::all_to_all_async(const void* send, void* recv, size_t count, DType t) {
  check_all_to_all(send, recv, count, t, 1);
  auto t0 = std::chrono::steady_clock::now();
  if (count) std::memcpy(recv, send, count * dtype_size(t));
  stats_.add(CommOp::AllToAll, comm_algorithm_bytes(CommOp::AllToAll, count, t), seconds_since(t0));
  return std::make_shared<DoneHandle>();
}

CommHandlePtr SingleCommunicator::broadcast_async(void* buf, size_t count, DType t, int root) {
  check_root(root, 1);
  (void)buf;
  stats_.add(CommOp::Broadcast, comm_algorithm_bytes(CommOp::Broadcast, count, t), 0.0);
  return std::make_shared<DoneHandle>();
}

CommHandlePtr SingleCommunicator::fold(CommOp kind, const std::vector<Segment>& segments, void* recv, DType t,
                                       ReduceOp op) {
  check_reduction(kind, t, op);
  const size_t total = recv ? segments[0].count : check_segments(kind, segments, 1);
  auto t0 = std::chrono::steady_clock::now();
  for (const Segment& s : segments) reduce_rank_order(s.data, s.count, 1, t, op, recv ? recv : s.data);
  stats_.add(kind, comm_algorithm_bytes(kind, total, t), seconds_since(t0));
  return std::make_shared<DoneHandle>();
}

CommHandlePtr SingleCommunicator::all_gather_segments_async(const std::vector<Segment>& segments, DType t) {
  const size_t total = check_segments(CommOp::AllGather, segments, 1);
  stats_.add(CommOp::AllGather, comm_algorithm_bytes(CommOp::AllGather, total, t), 0.0);
  return std::make_shared<DoneHandle>();
}

CommHandlePtr SingleCommunicator::barrier_async() {
  stats_.add(CommOp::Barrier, 0, 0.0);
  return std::make_shared<DoneHandle>();
}

std::unique_ptr<Communicator> SingleCommunicator::split(int color, int) {
  if (color < 0) throw std::invalid_argument("split: color " + std::to_string(color) + " must be >= 0");
  return std::make_unique<SingleCommunicator>();
}

}  // namespace zt
