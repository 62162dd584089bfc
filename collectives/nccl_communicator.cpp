// NcclCommunicator: stream/event ordering, grouped launches, in-flight records for accounting and
// the watchdog that aborts the NCCL communicator when an op outlives the timeout.
#include "collectives/nccl_communicator.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "collectives/comm_common.h"
#include "collectives/record_queue.h"
#include "base/cuda_check.h"
#include "base/nccl_check.h"

namespace zt {
namespace {

using Clock = std::chrono::steady_clock;

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::F32: return ncclFloat32;
    case DType::BF16: return ncclBfloat16;
    case DType::F16: return ncclFloat16;
    case DType::I64: return ncclInt64;
    case DType::U8: return ncclUint8;
  }
  return ncclFloat32;
}

// Start/done events of one launch (a single op, or every op of one group).
struct Events {
  cudaEvent_t start = nullptr, done = nullptr;
  bool done_recorded = false;
  Events() {
    ZT_CUDA_CHECK(cudaEventCreate(&start));
    ZT_CUDA_CHECK(cudaEventCreate(&done));
  }
  ~Events() {
    cudaEventDestroy(start);
    cudaEventDestroy(done);
  }
};

struct Record {
  CommOp op;
  size_t count;
  DType dtype;
  uint64_t seq;
  Clock::time_point issued;
  std::shared_ptr<Events> ev;
  double share = 1.0;  // fraction of the launch's time charged to this op
};

class NcclHandle final : public CommHandle {
 public:
  explicit NcclHandle(std::shared_ptr<Events> ev) : ev_(std::move(ev)) {}
  void wait() override {
    require_recorded("wait");
    ZT_CUDA_CHECK(cudaEventSynchronize(ev_->done));
  }
  bool done() override {
    if (!ev_->done_recorded) return false;
    cudaError_t e = cudaEventQuery(ev_->done);
    if (e == cudaErrorNotReady) return false;
    ZT_CUDA_CHECK(e);
    return true;
  }
  const std::shared_ptr<Events>& events() const { return ev_; }

 private:
  void require_recorded(const char* what) const {
    if (!ev_->done_recorded)
      throw std::logic_error(std::string("NcclCommunicator: handle.") + what +
                             "() inside an open group; call group_end() first");
  }
  std::shared_ptr<Events> ev_;
};

}  // namespace

std::string nccl_version_string() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "unknown";
  return std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." + std::to_string(v % 100);
}

int cuda_device_count_or_zero() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return n;
}

struct NcclCommunicator::Impl {
  const Bootstrap& boot;
  int rank = 0, world = 1, device = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr, compute = nullptr;
  float* barrier_buf = nullptr;
  uint64_t init_device_bytes = 0;  // the driver's used device memory grown across ncclCommInitRank
  std::atomic<double> timeout_s;
  CommStatsTable stats;

  std::mutex mu;  // guards in_flight, group state, and the watchdog's stop flag
  std::condition_variable cv;
  // Issue order; an open group's records are kept by sequence number, since retire_locked() (from
  // issue() and the watchdog) pops finished records before the group while it is open.
  RecordQueue<Record> in_flight;
  bool stop = false;
  int group_depth = 0;
  std::shared_ptr<Events> group_ev;
  std::thread watchdog;

  Impl(const Bootstrap& b, CommOptions o) : boot(b), timeout_s(o.timeout_s) {}

  // Retires completed records from the front (issue order); caller holds mu.
  void retire_locked() {
    in_flight.retire([this](const Record& r) {
      if (!r.ev->done_recorded) return false;
      cudaError_t e = cudaEventQuery(r.ev->done);
      if (e == cudaErrorNotReady) return false;
      ZT_CUDA_CHECK(e);
      float ms = 0;
      ZT_CUDA_CHECK(cudaEventElapsedTime(&ms, r.ev->start, r.ev->done));
      stats.add(r.op, comm_algorithm_bytes(r.op, r.count, r.dtype), r.share * ms * 1e-3);
      return true;
    });
  }

  void watchdog_loop() {
    ZT_CUDA_CHECK(cudaSetDevice(device));
    std::unique_lock<std::mutex> lock(mu);
    while (!stop) {
      cv.wait_for(lock, std::chrono::milliseconds(200));
      if (stop) break;
      retire_locked();
      if (in_flight.empty() || !in_flight.front().ev->done_recorded) continue;
      const Record& r = in_flight.front();
      const double limit = timeout_s.load();
      if (std::chrono::duration<double>(Clock::now() - r.issued).count() < limit) continue;
      std::fprintf(stderr,
                   "[rank %d] zerotrain: NCCL collective %s(%zu) #%llu on rank %d did not complete within %g s; "
                   "a peer rank may have died or called a different collective (raise the bound with "
                   "ZT_COMM_TIMEOUT_S). Aborting the NCCL communicator and the job.\n",
                   rank, comm_op_name(r.op), r.count, (unsigned long long)r.seq, rank, limit);
      std::fflush(stderr);
      // ncclCommAbort stops NCCL's kernels so the peers' watchdogs see the failure too; it may
      // itself block (e.g. on a device-wide sync), so the job ends after at most 10 s regardless.
      auto aborted = std::make_shared<std::atomic<bool>>(false);
      std::thread([c = comm, aborted] {
        ncclCommAbort(c);
        aborted->store(true);
      }).detach();
      for (int i = 0; i < 100 && !aborted->load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (!aborted->load()) std::fprintf(stderr, "[rank %d] zerotrain: ncclCommAbort did not return within 10 s\n", rank);
      boot.abort_job(1);
    }
  }

  // Orders the comm stream after the compute stream and opens a launch; returns its events.
  std::shared_ptr<Events> begin_launch() {
    auto ev = std::make_shared<Events>();
    ZT_CUDA_CHECK(cudaEventRecord(ev->start, compute));
    ZT_CUDA_CHECK(cudaStreamWaitEvent(stream, ev->start, 0));
    return ev;
  }

  template <class Launch>
  CommHandlePtr issue(CommOp op, size_t count, DType t, Launch launch) {
    std::lock_guard<std::mutex> lock(mu);
    retire_locked();
    std::shared_ptr<Events> ev = group_depth ? group_ev : begin_launch();
    launch();
    in_flight.push(Record{op, count, t, 0, Clock::now(), ev});  // in an open group, joins it
    if (!group_depth) {
      ZT_CUDA_CHECK(cudaEventRecord(ev->done, stream));
      ev->done_recorded = true;
    }
    return std::make_shared<NcclHandle>(ev);
  }
};

NcclCommunicator::NcclCommunicator(const Bootstrap& boot, CommOptions options)
    : impl_(std::make_unique<Impl>(boot, options)) {
  Impl& m = *impl_;
  if (!(options.timeout_s > 0)) throw std::invalid_argument("NcclCommunicator: timeout_s must be > 0");
  int n = cuda_device_count_or_zero();
  if (n == 0) {
    throw std::runtime_error("NcclCommunicator: no CUDA device is visible on rank " + std::to_string(boot.rank()) +
                             " (check nvidia-smi and CUDA_VISIBLE_DEVICES, or use the MPI communicator)");
  }
  m.rank = boot.rank();
  m.world = boot.world_size();
  m.device = boot.local_rank() % n;
  ZT_CUDA_CHECK(cudaSetDevice(m.device));
  ZT_CUDA_CHECK(cudaStreamCreateWithFlags(&m.stream, cudaStreamNonBlocking));
  ZT_CUDA_CHECK(cudaMalloc(&m.barrier_buf, sizeof(float)));
  ncclUniqueId id;
  if (m.rank == 0) ZT_NCCL_CHECK(ncclGetUniqueId(&id));
  boot.broadcast_bytes(&id, sizeof id, 0);
  size_t free_before = 0, free_after = 0, total = 0;
  ZT_CUDA_CHECK(cudaMemGetInfo(&free_before, &total));
  ZT_NCCL_CHECK(ncclCommInitRank(&m.comm, m.world, id, m.rank));
  ZT_CUDA_CHECK(cudaMemGetInfo(&free_after, &total));
  // Another process on the same device may allocate meanwhile: the growth is this process's only
  // when the device is its own, which NCCL requires of its ranks anyway.
  m.init_device_bytes = free_before > free_after ? uint64_t(free_before - free_after) : 0;
  boot.attach();
  m.watchdog = std::thread([this] { impl_->watchdog_loop(); });
}

NcclCommunicator::NcclCommunicator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {
  impl_->boot.attach();
  impl_->watchdog = std::thread([this] { impl_->watchdog_loop(); });
}

std::unique_ptr<Communicator> NcclCommunicator::split(int color, int key) {
  if (color < 0) throw std::invalid_argument("split: color " + std::to_string(color) + " must be >= 0");
  Impl& m = *impl_;
  ZT_CUDA_CHECK(cudaStreamSynchronize(m.stream));
  CommOptions o;
  o.timeout_s = m.timeout_s.load();
  auto g = std::make_unique<Impl>(m.boot, o);
  g->device = m.device;
  g->compute = m.compute;
  ZT_CUDA_CHECK(cudaSetDevice(g->device));
  ZT_CUDA_CHECK(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
  ZT_CUDA_CHECK(cudaMalloc(&g->barrier_buf, sizeof(float)));
  ZT_NCCL_CHECK(ncclCommSplit(m.comm, color, key, &g->comm, nullptr));
  ZT_NCCL_CHECK(ncclCommUserRank(g->comm, &g->rank));
  ZT_NCCL_CHECK(ncclCommCount(g->comm, &g->world));
  return std::unique_ptr<Communicator>(new NcclCommunicator(std::move(g)));
}

NcclCommunicator::~NcclCommunicator() {
  Impl& m = *impl_;
  {
    std::lock_guard<std::mutex> lock(m.mu);
    m.stop = true;
  }
  m.cv.notify_all();
  m.watchdog.join();
  ZT_CUDA_CHECK(cudaStreamSynchronize(m.stream));
  ZT_NCCL_CHECK(ncclCommDestroy(m.comm));
  cudaFree(m.barrier_buf);
  cudaStreamDestroy(m.stream);
  m.boot.detach();
}

int NcclCommunicator::rank() const { return impl_->rank; }
uint64_t NcclCommunicator::device_buffer_bytes() const { return impl_->init_device_bytes; }
int NcclCommunicator::world_size() const { return impl_->world; }
int NcclCommunicator::device() const { return impl_->device; }
void* NcclCommunicator::comm_stream() const { return impl_->stream; }
void NcclCommunicator::set_compute_stream(void* s) { impl_->compute = static_cast<cudaStream_t>(s); }

void NcclCommunicator::set_timeout_s(double s) {
  if (!(s > 0)) throw std::invalid_argument("NcclCommunicator::set_timeout_s: seconds must be > 0");
  impl_->timeout_s.store(s);
}

CommStats NcclCommunicator::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->retire_locked();
  return impl_->stats.snapshot();
}

void NcclCommunicator::reset_stats() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->retire_locked();
  impl_->stats.reset();
}

void NcclCommunicator::compute_wait(const CommHandlePtr& h) {
  auto* nh = dynamic_cast<NcclHandle*>(h.get());
  if (!nh) throw std::invalid_argument("NcclCommunicator::compute_wait: handle is not from an NCCL communicator");
  if (!nh->events()->done_recorded) throw std::logic_error("NcclCommunicator::compute_wait inside an open group");
  ZT_CUDA_CHECK(cudaStreamWaitEvent(impl_->compute, nh->events()->done, 0));
}

void NcclCommunicator::group_start() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->group_depth++ == 0) {
    impl_->group_ev = impl_->begin_launch();
    impl_->in_flight.open_group();
  }
  ZT_NCCL_CHECK(ncclGroupStart());
}

void NcclCommunicator::group_end() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->group_depth == 0) throw std::logic_error("NcclCommunicator::group_end without group_start");
  ZT_NCCL_CHECK(ncclGroupEnd());
  if (--impl_->group_depth == 0) {
    ZT_CUDA_CHECK(cudaEventRecord(impl_->group_ev->done, impl_->stream));
    impl_->group_ev->done_recorded = true;
    impl_->in_flight.close_group();  // each of the group's records is charged 1/n of the launch
    impl_->group_ev.reset();
  }
}

CommHandlePtr NcclCommunicator::all_reduce_async(const void* send, void* recv, size_t count, DType t, ReduceOp op) {
  check_reduction(CommOp::AllReduce, t, op);
  Impl& m = *impl_;
  return m.issue(CommOp::AllReduce, count, t, [&] {
    ZT_NCCL_CHECK(ncclAllReduce(send, recv, count, nccl_type(t), op == ReduceOp::Avg ? ncclAvg : ncclSum, m.comm, m.stream));
  });
}

CommHandlePtr NcclCommunicator::reduce_scatter_async(const void* send, void* recv, size_t count, DType t,
                                                     ReduceOp op) {
  check_even_split(CommOp::ReduceScatter, count, impl_->world);
  check_reduction(CommOp::ReduceScatter, t, op);
  Impl& m = *impl_;
  return m.issue(CommOp::ReduceScatter, count, t, [&] {
    ZT_NCCL_CHECK(ncclReduceScatter(send, recv, count / size_t(m.world), nccl_type(t),
                                    op == ReduceOp::Avg ? ncclAvg : ncclSum, m.comm, m.stream));
  });
}

CommHandlePtr NcclCommunicator::all_gather_async(const void* send, void* recv, size_t count, DType t) {
  check_even_split(CommOp::AllGather, count, impl_->world);
  Impl& m = *impl_;
  return m.issue(CommOp::AllGather, count, t, [&] {
    ZT_NCCL_CHECK(ncclAllGather(send, recv, count / size_t(m.world), nccl_type(t), m.comm, m.stream));
  });
}

CommHandlePtr NcclCommunicator::all_to_all_async(const void* send, void* recv, size_t count, DType t) {
  check_all_to_all(send, recv, count, t, impl_->world);
  Impl& m = *impl_;
  return m.issue(CommOp::AllToAll, count, t, [&] {
    const size_t chunk = count / size_t(m.world), bytes = chunk * dtype_size(t);
    ZT_NCCL_CHECK(ncclGroupStart());
    for (int j = 0; j < m.world; ++j) {
      ZT_NCCL_CHECK(ncclSend(static_cast<const char*>(send) + size_t(j) * bytes, chunk, nccl_type(t), j, m.comm, m.stream));
      ZT_NCCL_CHECK(ncclRecv(static_cast<char*>(recv) + size_t(j) * bytes, chunk, nccl_type(t), j, m.comm, m.stream));
    }
    ZT_NCCL_CHECK(ncclGroupEnd());
  });
}

CommHandlePtr NcclCommunicator::broadcast_async(void* buf, size_t count, DType t, int root) {
  check_root(root, impl_->world);
  Impl& m = *impl_;
  return m.issue(CommOp::Broadcast, count, t, [&] {
    ZT_NCCL_CHECK(ncclBroadcast(buf, buf, count, nccl_type(t), root, m.comm, m.stream));
  });
}

// Bucketed ops: one grouped NCCL launch over the segments (ncclReduce to each segment's owner,
// ncclAllReduce, ncclBroadcast from the owner), recorded as one call of the op.
template <class PerSegment>
static void nccl_group(const std::vector<Segment>& segments, PerSegment per_segment) {
  ZT_NCCL_CHECK(ncclGroupStart());
  for (const Segment& s : segments)
    if (s.count) per_segment(s);
  ZT_NCCL_CHECK(ncclGroupEnd());
}

CommHandlePtr NcclCommunicator::reduce_scatter_segments_async(const std::vector<Segment>& segments, DType t,
                                                              ReduceOp op) {
  check_reduction(CommOp::ReduceScatter, t, op);
  Impl& m = *impl_;
  const size_t total = check_segments(CommOp::ReduceScatter, segments, m.world);
  return m.issue(CommOp::ReduceScatter, total, t, [&] {
    nccl_group(segments, [&](const Segment& s) {
      ZT_NCCL_CHECK(ncclReduce(s.data, s.data, s.count, nccl_type(t), op == ReduceOp::Avg ? ncclAvg : ncclSum, s.owner,
                               m.comm, m.stream));
    });
  });
}

CommHandlePtr NcclCommunicator::all_reduce_segments_async(const std::vector<Segment>& segments, DType t, ReduceOp op) {
  check_reduction(CommOp::AllReduce, t, op);
  Impl& m = *impl_;
  const size_t total = check_segments(CommOp::AllReduce, segments, m.world);
  return m.issue(CommOp::AllReduce, total, t, [&] {
    nccl_group(segments, [&](const Segment& s) {
      ZT_NCCL_CHECK(ncclAllReduce(s.data, s.data, s.count, nccl_type(t), op == ReduceOp::Avg ? ncclAvg : ncclSum,
                                  m.comm, m.stream));
    });
  });
}

CommHandlePtr NcclCommunicator::all_gather_segments_async(const std::vector<Segment>& segments, DType t) {
  Impl& m = *impl_;
  const size_t total = check_segments(CommOp::AllGather, segments, m.world);
  return m.issue(CommOp::AllGather, total, t, [&] {
    nccl_group(segments, [&](const Segment& s) {
      ZT_NCCL_CHECK(ncclBroadcast(s.data, s.data, s.count, nccl_type(t), s.owner, m.comm, m.stream));
    });
  });
}

CommHandlePtr NcclCommunicator::barrier_async() {
  Impl& m = *impl_;
  return m.issue(CommOp::Barrier, 0, DType::F32, [&] {
    ZT_NCCL_CHECK(ncclAllReduce(m.barrier_buf, m.barrier_buf, 1, ncclFloat32, ncclSum, m.comm, m.stream));
  });
}

}  // namespace zt
