// NcclCommunicator: collectives on device buffers over NCCL on a private CUDA stream, ordered
// after the compute stream with CUDA events; batches buckets with group_start/group_end; watchdog.
#pragma once

#include <memory>
#include <string>

#include "collectives/bootstrap.h"
#include "collectives/comm_options.h"
#include "collectives/communicator.h"

namespace zt {

// NCCL's library version, "2.28.9".
std::string nccl_version_string();
// Number of CUDA devices visible, 0 when there is no GPU or no usable driver (never aborts).
int cuda_device_count_or_zero();

class NcclCommunicator final : public Communicator {
 public:
  // Selects device local_rank % device_count, creates the comm stream, and builds the NCCL
  // communicator from rank 0's ncclUniqueId (broadcast over MPI; one rank without MPI).
  // Throws std::runtime_error when no GPU is present. Debug fingerprints are not implemented for
  // NCCL (options.debug is ignored); the watchdog aborts after options.timeout_s.
  explicit NcclCommunicator(const Bootstrap& boot, CommOptions options = CommOptions::from_env());
  ~NcclCommunicator() override;  // synchronizes the comm stream, then destroys the NCCL comm

  int rank() const override;
  int world_size() const override;
  std::string name() const override { return "nccl"; }

  // Each call first makes the comm stream wait for work already queued on the compute stream.
  CommHandlePtr all_reduce_async(const void* send, void* recv, size_t count, DType t, ReduceOp op) override;
  CommHandlePtr reduce_scatter_async(const void* send, void* recv, size_t count, DType t, ReduceOp op) override;
  CommHandlePtr all_gather_async(const void* send, void* recv, size_t count, DType t) override;
  CommHandlePtr broadcast_async(void* buf, size_t count, DType t, int root) override;
  CommHandlePtr all_to_all_async(const void* send, void* recv, size_t count, DType t) override;
  CommHandlePtr barrier_async() override;
  CommHandlePtr reduce_scatter_segments_async(const std::vector<Segment>& segments, DType t, ReduceOp op) override;
  CommHandlePtr all_reduce_segments_async(const std::vector<Segment>& segments, DType t, ReduceOp op) override;
  CommHandlePtr all_gather_segments_async(const std::vector<Segment>& segments, DType t) override;

  // ncclCommSplit after this communicator's stream drained; the group gets its own comm stream and
  // watchdog and the same compute stream.
  std::unique_ptr<Communicator> split(int color, int key) override;
  CommStats stats() const override;
  void reset_stats() override;
  // The driver's used device memory grown across ncclCommInitRank (see Communicator).
  uint64_t device_buffer_bytes() const override;

  // cudaStream_t the collectives are ordered after (default: the legacy default stream, nullptr).
  void set_compute_stream(void* stream) override;
  void* comm_stream() const;
  int device() const;
  // Makes the compute stream wait (on the device, without blocking the host) for handle h,
  // which must come from this communicator.
  void compute_wait(const CommHandlePtr& h);
  // Calls between group_start() and group_end() are fused into one NCCL launch (ncclGroupStart/End).
  // Their handles complete together at group_end().
  void group_start();
  void group_end();
  void set_timeout_s(double seconds);

  struct Impl;

 private:
  explicit NcclCommunicator(std::unique_ptr<Impl> impl);  // split(): impl's comm is set
  std::unique_ptr<Impl> impl_;
};

}  // namespace zt
