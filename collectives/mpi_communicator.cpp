// MpiCommunicator: the queue, the communication thread, the watchdog, the debug fingerprint check
// and the byte-moving MPI calls around the rank-order reduction.
#include "collectives/mpi_communicator.h"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "collectives/comm_common.h"
#include "collectives/comm_handle.h"
#include "collectives/fixed_order_reduce.h"
#include "base/mpi_check.h"
#include "collectives/peer_status.h"

namespace zt {
namespace {

using Clock = std::chrono::steady_clock;

struct Work {
  CommOp op = CommOp::Barrier;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  DType dtype = DType::F32;
  ReduceOp rop = ReduceOp::Sum;
  int root = 0;
  uint64_t seq = 0;
  bool debug = false;
  bool segmented = false;  // a bucketed op over `segments` (count = their total)
  std::vector<Segment> segments;
  std::shared_ptr<QueuedHandle> handle;
};

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::F32: return MPI_FLOAT;
    case DType::BF16: return MPI_UINT16_T;  // bytes only: reductions happen in fixed_order_reduce
    case DType::F16: return MPI_UINT16_T;
    case DType::I64: return MPI_INT64_T;
  }
  return MPI_BYTE;
}

std::string describe(CommOp op, size_t count) { return std::string(comm_op_name(op)) + "(" + std::to_string(count) + ")"; }

// The fingerprint exchanged in debug mode.
enum { kFpOp, kFpCount, kFpDtype, kFpExtra, kFpSeq, kFpFields };

std::string describe_fp(const int64_t* f, bool detailed) {
  std::string s = std::string(comm_op_name(CommOp(f[kFpOp]))) + "(" + std::to_string(f[kFpCount]);
  if (detailed) {
    s += std::string(", ") + dtype_name(DType(f[kFpDtype]));
    CommOp op = CommOp(f[kFpOp]);
    if (op == CommOp::AllReduce || op == CommOp::ReduceScatter)
      s += std::string(", ") + reduce_op_name(ReduceOp(f[kFpExtra]));
    if (op == CommOp::Broadcast) s += ", root " + std::to_string(f[kFpExtra]);
  }
  return s + ")";
}

}  // namespace

struct MpiCommunicator::Impl {
  const Bootstrap& boot;
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, world = 1;
  std::atomic<double> timeout_s;
  std::atomic<bool> debug;
  CommStatsTable stats;

  std::mutex q_mu;  // guards queue, next_seq, stopping
  std::condition_variable q_cv;
  std::deque<Work> queue;
  uint64_t next_seq = 1;
  bool stopping = false;

  std::mutex wd_mu;  // guards the "current op" record the watchdog watches
  std::condition_variable wd_cv;
  bool wd_active = false, wd_stop = false;
  Work wd_work;
  Clock::time_point wd_start;

  std::unique_ptr<PeerStatus> peers;  // names the ranks that did not arrive when the watchdog fires

  // The two working buffers, each at most `chunk` bytes: every call is cut to fit them. Before
  // reserve_buffers they grow on demand up to half the cap; reserve_buffers sizes them once.
  struct WorkBuffer {
    std::unique_ptr<char[]> data;
    size_t size = 0;
    void resize(size_t n) {  // exactly n bytes, zero-filled (so they are resident when counted)
      data.reset(n ? new char[n]() : nullptr);
      size = n;
    }
  };
  const uint64_t cap;
  std::mutex buf_mu;  // guards scratch, pack, chunk: the comm thread while a call runs; reserve
  WorkBuffer scratch, pack;
  size_t chunk = 0;
  std::atomic<uint64_t> held{0};
  std::thread comm_thread, watchdog_thread;

  Impl(const Bootstrap& b, CommOptions o)
      : boot(b), timeout_s(o.timeout_s), debug(o.debug), cap(o.buffer_bytes),
        chunk(size_t(comm_chunk_bytes(UINT64_MAX, o.buffer_bytes))) {}

  CommHandlePtr enqueue(Work w) {
    if (w.count > size_t(INT_MAX)) {
      throw std::invalid_argument(std::string(comm_op_name(w.op)) + ": count " + std::to_string(w.count) +
                                  " exceeds MPI's int count limit (" + std::to_string(INT_MAX) +
                                  "); split the buffer into buckets");
    }
    w.handle = std::make_shared<QueuedHandle>();
    w.debug = debug.load();
    CommHandlePtr h = w.handle;
    {
      std::lock_guard<std::mutex> lock(q_mu);
      w.seq = next_seq++;
      queue.push_back(std::move(w));
    }
    q_cv.notify_one();
    return h;
  }

  void comm_loop() {
    for (;;) {
      Work w;
      {
        std::unique_lock<std::mutex> lock(q_mu);
        q_cv.wait(lock, [&] { return stopping || !queue.empty(); });
        if (queue.empty()) return;  // stopping and drained
        w = std::move(queue.front());
        queue.pop_front();
      }
      auto t0 = Clock::now();
      {
        std::lock_guard<std::mutex> lock(wd_mu);
        wd_work = w;
        wd_work.handle.reset();
        wd_start = t0;
        wd_active = true;
      }
      wd_cv.notify_all();
      if (peers) peers->begin(w.seq, w.op, w.count);
      std::exception_ptr err;
      try {
        if (w.debug) check_fingerprint(w);
        std::lock_guard<std::mutex> buffers(buf_mu);
        run(w);
      } catch (...) {
        err = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(wd_mu);
        wd_active = false;
      }
      if (peers) peers->end(w.seq);
      double secs = std::chrono::duration<double>(Clock::now() - t0).count();
      if (!err) stats.add(w.op, comm_algorithm_bytes(w.op, w.count, w.dtype), secs);
      w.handle->complete(err);
    }
  }

  void watchdog_loop() {
    std::unique_lock<std::mutex> lock(wd_mu);
    while (!wd_stop) {
      if (!wd_active) {
        wd_cv.wait(lock);
        continue;
      }
      const uint64_t seq = wd_work.seq;
      const double limit = timeout_s.load();
      auto deadline = wd_start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limit));
      wd_cv.wait_until(lock, deadline, [&] { return wd_stop || !wd_active || wd_work.seq != seq; });
      if (wd_stop || !wd_active || wd_work.seq != seq || Clock::now() < deadline) continue;
      const std::string call = describe(wd_work.op, wd_work.count);
      lock.unlock();  // the peers' answers take up to two seconds
      std::string who = peers ? peers->report(seq) : std::string();
      if (who.empty()) who = "a peer rank may have died, hung, or called a different collective";
      std::fprintf(stderr,
                   "[rank %d] zerotrain: collective %s #%llu on rank %d did not complete within %g s; %s. To wait "
                   "longer set ZT_COMM_TIMEOUT_S=<seconds> (now %g). Aborting the job.\n",
                   rank, call.c_str(), (unsigned long long)seq, rank, limit, who.c_str(), limit);
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }

  std::string context(const Work& w) const {
    return describe(w.op, w.count) + " #" + std::to_string(w.seq) + " on rank " + std::to_string(rank);
  }

  void check_fingerprint(const Work& w) {
    int64_t mine[kFpFields] = {int64_t(w.op), int64_t(w.count), int64_t(w.dtype),
                               w.op == CommOp::Broadcast ? int64_t(w.root) : int64_t(w.rop), int64_t(w.seq)};
    if (w.op == CommOp::AllGather || w.op == CommOp::AllToAll || w.op == CommOp::Barrier) mine[kFpExtra] = 0;
    if (w.op == CommOp::Barrier) mine[kFpDtype] = 0;
    std::vector<int64_t> all(size_t(world) * kFpFields);
    ZT_MPI_CHECK(MPI_Allgather(mine, kFpFields, MPI_INT64_T, all.data(), kFpFields, MPI_INT64_T, comm),
                     "debug fingerprint exchange before " + context(w));
    const int64_t* f0 = all.data();
    for (int r = 1; r < world; ++r) {
      const int64_t* f = all.data() + size_t(r) * kFpFields;
      if (std::equal(f, f + kFpFields, f0)) continue;
      bool detailed = f[kFpOp] == f0[kFpOp] && f[kFpCount] == f0[kFpCount];
      std::string at = "at call #" + std::to_string(f0[kFpSeq]);
      if (f[kFpSeq] != f0[kFpSeq]) at += " (rank " + std::to_string(r) + "'s call #" + std::to_string(f[kFpSeq]) + ")";
      std::fprintf(stderr, "[rank %d] zerotrain: collective mismatch: rank %d called %s while rank 0 called %s %s. Aborting the job.\n",
                   rank, r, describe_fp(f, detailed).c_str(), describe_fp(f0, detailed).c_str(), at.c_str());
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }

  char* buffer(WorkBuffer& b, size_t n) {  // n <= chunk: every caller cuts its call to fit
    if (b.size < n) {
      b.resize(n);
      held.store(scratch.size + pack.size);
    }
    return b.data.get();
  }
  char* scratch_bytes(size_t n) { return buffer(scratch, n); }
  char* pack_bytes(size_t n) { return buffer(pack, n); }

  void reserve(uint64_t largest_call_bytes) {
    std::lock_guard<std::mutex> lock(buf_mu);
    chunk = size_t(comm_chunk_bytes(largest_call_bytes, cap));
    scratch.resize(chunk);
    pack.resize(chunk);
    held.store(scratch.size + pack.size);
  }

  // Elements of one chunk: an all-reduce of n elements needs ceil(n/W)·W of scratch.
  size_t chunk_elems(size_t es) const { return std::max<size_t>(1, chunk / es - size_t(world - 1)); }

  // All-reduce of `count` elements in place at buf: chunk j (balanced: the first count%W chunks one
  // element longer) is reduced by rank j in rank order, then every chunk is gathered.
  void all_reduce_in_place(void* buf, size_t count, DType t, ReduceOp rop, const std::string& ctx) {
    if (!count) return;
    const size_t es = dtype_size(t);
    const MPI_Datatype dt = mpi_type(t);
    const size_t nw = size_t(world);
    std::vector<int> counts(nw), displs(nw), rcounts(nw), rdispls(nw);
    const size_t base = count / nw, rem = count % nw;
    for (int j = 0, off = 0; j < world; ++j) {
      counts[size_t(j)] = int(base + (size_t(j) < rem ? 1 : 0));
      displs[size_t(j)] = off;
      off += counts[size_t(j)];
    }
    const int mine = counts[size_t(rank)];
    for (int i = 0; i < world; ++i) {
      rcounts[size_t(i)] = mine;
      rdispls[size_t(i)] = i * mine;
    }
    char* rows = scratch_bytes(size_t(mine) * nw * es);
    ZT_MPI_CHECK(MPI_Alltoallv(buf, counts.data(), displs.data(), dt, rows, rcounts.data(), rdispls.data(), dt, comm),
                 ctx);
    char* out = static_cast<char*>(buf) + size_t(displs[size_t(rank)]) * es;
    reduce_rank_order(rows, size_t(mine), world, t, rop, out);
    ZT_MPI_CHECK(MPI_Allgatherv(MPI_IN_PLACE, 0, dt, buf, counts.data(), displs.data(), dt, comm), ctx);
  }

  // The same, chunk by chunk (each element's fold does not depend on the chunk it is in).
  void all_reduce_chunked(void* buf, size_t count, DType t, ReduceOp rop, const std::string& ctx) {
    const size_t es = dtype_size(t), step = chunk_elems(es);
    for (size_t off = 0; off < count; off += step)
      all_reduce_in_place(static_cast<char*>(buf) + off * es, std::min(step, count - off), t, rop, ctx);
  }

  // Reduce-scatter of `count` elements (count/W per rank), moved `per_rank` elements of every
  // rank's shard at a time: chunk a sends elements [q·shard + a, q·shard + a + m) to rank q.
  void reduce_scatter_chunked(const Work& w, const std::string& ctx) {
    const size_t es = dtype_size(w.dtype), shard = w.count / size_t(world);
    const size_t per_rank = std::max<size_t>(1, chunk / es / size_t(world));
    const MPI_Datatype dt = mpi_type(w.dtype);
    const size_t nw = size_t(world);
    std::vector<int> counts(nw), displs(nw), rdispls(nw);
    for (size_t a = 0; a < shard; a += per_rank) {
      const size_t m = std::min(per_rank, shard - a);
      for (int q = 0; q < world; ++q) {
        counts[size_t(q)] = int(m);
        displs[size_t(q)] = int(size_t(q) * shard + a);
        rdispls[size_t(q)] = int(size_t(q) * m);
      }
      char* rows = scratch_bytes(m * size_t(world) * es);
      ZT_MPI_CHECK(MPI_Alltoallv(w.send, counts.data(), displs.data(), dt, rows, counts.data(), rdispls.data(), dt, comm),
                   ctx);
      reduce_rank_order(rows, m, world, w.dtype, w.rop, static_cast<char*>(w.recv) + a * es);
    }
  }

  // Cuts a segment list into consecutive lists of at most `total` elements, at most `per_owner`
  // of them owned by any one rank (a segment may be split between lists). Counts and owners alone
  // decide the cuts, so every rank cuts its list the same way.
  static std::vector<std::vector<Segment>> cut_segments(const std::vector<Segment>& segs, size_t es, size_t total,
                                                        size_t per_owner, int world) {
    std::vector<std::vector<Segment>> out(1);
    std::vector<size_t> owned(size_t(world), 0);
    size_t in_list = 0;
    for (const Segment& s : segs) {
      size_t done = 0;
      while (done < s.count) {
        const size_t take = std::min({s.count - done, per_owner - owned[size_t(s.owner)], total - in_list});
        if (take == 0) {  // this list is full: start the next
          out.emplace_back();
          std::fill(owned.begin(), owned.end(), 0);
          in_list = 0;
          continue;
        }
        out.back().push_back({static_cast<char*>(s.data) + done * es, take, s.owner});
        owned[size_t(s.owner)] += take;
        in_list += take;
        done += take;
      }
    }
    return out;
  }

  void run_segments(const Work& w, const std::string& ctx) {
    const size_t es = dtype_size(w.dtype);
    const size_t total = w.op == CommOp::AllReduce ? chunk_elems(es) : std::max<size_t>(1, chunk / es);
    // A reduce-scatter receives world·(its own elements) into scratch: each owner's part of a list
    // is at most a world-th of it.
    const size_t per_owner = w.op == CommOp::ReduceScatter ? std::max<size_t>(1, total / size_t(world)) : total;
    if (w.count <= total && (w.op != CommOp::ReduceScatter || fits_per_owner(w.segments, per_owner))) {
      run_segment_list(w, w.segments, w.count, ctx);
      return;
    }
    for (const auto& list : cut_segments(w.segments, es, total, per_owner, world)) {
      size_t n = 0;
      for (const Segment& s : list) n += s.count;
      run_segment_list(w, list, n, ctx);
    }
  }

  bool fits_per_owner(const std::vector<Segment>& segs, size_t per_owner) const {
    std::vector<size_t> c(size_t(world), 0);
    for (const Segment& s : segs)
      if ((c[size_t(s.owner)] += s.count) > per_owner) return false;
    return true;
  }

  // Elements each rank owns in a segment list, and the list's segments grouped by owner (in list
  // order within an owner): the layout the byte-moving calls use.
  std::vector<int> owned_counts(const std::vector<Segment>& segs) const {
    std::vector<int> c(size_t(world), 0);
    for (const Segment& s : segs) c[size_t(s.owner)] += int(s.count);
    return c;
  }

  // One list that fits the buffers: packed by owner, moved, reduced or gathered, unpacked.
  void run_segment_list(const Work& w, const std::vector<Segment>& segs, size_t count, const std::string& ctx) {
    const size_t es = dtype_size(w.dtype);
    const MPI_Datatype dt = mpi_type(w.dtype);
    if (w.op == CommOp::AllReduce) {  // pack, all-reduce in place, unpack
      char* buf = pack_bytes(count * es);
      size_t off = 0;
      for (const Segment& s : segs) std::memcpy(buf + off * es, s.data, s.count * es), off += s.count;
      all_reduce_in_place(buf, count, w.dtype, w.rop, ctx);
      off = 0;
      for (const Segment& s : segs) std::memcpy(s.data, buf + off * es, s.count * es), off += s.count;
      return;
    }
    const std::vector<int> counts = owned_counts(segs);
    std::vector<int> displs(size_t(world), 0);
    for (int q = 1; q < world; ++q) displs[size_t(q)] = displs[size_t(q - 1)] + counts[size_t(q - 1)];
    const int mine = counts[size_t(rank)];
    char* buf = pack_bytes(count * es);  // segments grouped by owner, owner 0 first
    auto pack_owner = [&](int q, bool to_buf) {
      size_t off = size_t(displs[size_t(q)]);
      for (const Segment& s : segs) {
        if (s.owner != q) continue;
        if (to_buf) std::memcpy(buf + off * es, s.data, s.count * es);
        else std::memcpy(s.data, buf + off * es, s.count * es);
        off += s.count;
      }
    };
    if (w.op == CommOp::ReduceScatter) {
      for (int q = 0; q < world; ++q) pack_owner(q, true);
      std::vector<int> rcounts(size_t(world), mine), rdispls(size_t(world), 0);
      for (int p = 0; p < world; ++p) rdispls[size_t(p)] = p * mine;
      char* rows = scratch_bytes(size_t(mine) * size_t(world) * es);
      ZT_MPI_CHECK(MPI_Alltoallv(buf, counts.data(), displs.data(), dt, rows, rcounts.data(), rdispls.data(), dt, comm),
                   ctx);
      reduce_rank_order(rows, size_t(mine), world, w.dtype, w.rop, buf + size_t(displs[size_t(rank)]) * es);
      pack_owner(rank, false);
      return;
    }
    // All-gather: this rank's owned segments in its block, every block gathered, then unpacked.
    pack_owner(rank, true);
    ZT_MPI_CHECK(MPI_Allgatherv(MPI_IN_PLACE, 0, dt, buf, counts.data(), displs.data(), dt, comm), ctx);
    for (int q = 0; q < world; ++q)
      if (q != rank) pack_owner(q, false);
  }

  void run(const Work& w) {
    const size_t es = dtype_size(w.dtype);
    const MPI_Datatype dt = mpi_type(w.dtype);
    const std::string ctx = context(w);
    if (w.segmented) {
      run_segments(w, ctx);
      return;
    }
    switch (w.op) {
      case CommOp::Barrier:
        ZT_MPI_CHECK(MPI_Barrier(comm), ctx);
        return;
      case CommOp::Broadcast:
        if (w.count) ZT_MPI_CHECK(MPI_Bcast(w.recv, int(w.count), dt, w.root, comm), ctx);
        return;
      case CommOp::AllGather: {
        if (!w.count) return;
        const size_t shard = w.count / size_t(world);
        const void* own = static_cast<const char*>(w.recv) + size_t(rank) * shard * es;
        const void* src = (w.send == own) ? MPI_IN_PLACE : w.send;
        ZT_MPI_CHECK(MPI_Allgather(src, int(shard), dt, w.recv, int(shard), dt, comm), ctx);
        return;
      }
      case CommOp::ReduceScatter:
        if (w.count) reduce_scatter_chunked(w, ctx);
        return;
      case CommOp::AllToAll:
        if (w.count)
          ZT_MPI_CHECK(MPI_Alltoall(w.send, int(w.count / size_t(world)), dt, w.recv, int(w.count / size_t(world)), dt, comm),
                       ctx);
        return;
      case CommOp::AllReduce: {
        if (!w.count) return;
        if (w.send != w.recv) std::memcpy(w.recv, w.send, w.count * es);
        all_reduce_chunked(w.recv, w.count, w.dtype, w.rop, ctx);
        return;
      }
    }
  }
};

MpiCommunicator::MpiCommunicator(const Bootstrap& boot, CommOptions options)
    : impl_(std::make_unique<Impl>(boot, options)) {
  if (!boot.mpi_active()) {
    throw std::runtime_error(
        "MpiCommunicator: MPI is not initialized in this process (not started by mpirun, or built with "
        "ZT_MPI=OFF); launch with mpirun or use make_communicator(), which falls back to the single "
        "communicator at world size 1");
  }
  if (!(options.timeout_s > 0)) throw std::invalid_argument("MpiCommunicator: timeout_s must be > 0");
  ZT_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &impl_->comm));
  impl_->peers = std::make_unique<PeerStatus>();  // over COMM_WORLD: the world communicator's alone
  start();
}

MpiCommunicator::MpiCommunicator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) { start(); }

void MpiCommunicator::start() {
  // Errors come back to ZT_MPI_CHECK, which names the op and sequence number before aborting.
  ZT_MPI_CHECK(MPI_Comm_set_errhandler(impl_->comm, MPI_ERRORS_RETURN));
  ZT_MPI_CHECK(MPI_Comm_rank(impl_->comm, &impl_->rank));
  ZT_MPI_CHECK(MPI_Comm_size(impl_->comm, &impl_->world));
  impl_->boot.attach();
  impl_->comm_thread = std::thread([this] { impl_->comm_loop(); });
  impl_->watchdog_thread = std::thread([this] { impl_->watchdog_loop(); });
}

std::unique_ptr<Communicator> MpiCommunicator::split(int color, int key) {
  if (color < 0) throw std::invalid_argument("split: color " + std::to_string(color) + " must be >= 0");
  barrier_async()->wait();  // every queued call completed: the communication thread is idle
  CommOptions o;
  o.timeout_s = impl_->timeout_s.load();
  o.debug = impl_->debug.load();
  o.buffer_bytes = impl_->cap;
  auto group = std::make_unique<Impl>(impl_->boot, o);
  ZT_MPI_CHECK(MPI_Comm_split(impl_->comm, color, key, &group->comm));
  return std::unique_ptr<Communicator>(new MpiCommunicator(std::move(group)));
}

MpiCommunicator::~MpiCommunicator() {
  {
    std::lock_guard<std::mutex> lock(impl_->q_mu);
    impl_->stopping = true;
  }
  impl_->q_cv.notify_all();
  impl_->comm_thread.join();
  {
    std::lock_guard<std::mutex> lock(impl_->wd_mu);
    impl_->wd_stop = true;
  }
  impl_->wd_cv.notify_all();
  impl_->watchdog_thread.join();
  impl_->peers.reset();
  MPI_Comm_free(&impl_->comm);
  impl_->boot.detach();
}

int MpiCommunicator::rank() const { return impl_->rank; }
int MpiCommunicator::world_size() const { return impl_->world; }
CommStats MpiCommunicator::stats() const { return impl_->stats.snapshot(); }
uint64_t MpiCommunicator::buffer_bytes() const { return impl_->held.load(); }
uint64_t MpiCommunicator::buffer_bytes_for(uint64_t largest_call_bytes) const {
  return mpi_buffer_bytes(largest_call_bytes, impl_->cap);
}
void MpiCommunicator::reserve_buffers(uint64_t largest_call_bytes) { impl_->reserve(largest_call_bytes); }
void MpiCommunicator::reset_stats() { impl_->stats.reset(); }
void MpiCommunicator::set_timeout_s(double s) {
  if (!(s > 0)) throw std::invalid_argument("MpiCommunicator::set_timeout_s: seconds must be > 0, got " + std::to_string(s));
  impl_->timeout_s.store(s);
}
void MpiCommunicator::set_debug(bool on) { impl_->debug.store(on); }

CommHandlePtr MpiCommunicator::all_reduce_async(const void* send, void* recv, size_t count, DType t, ReduceOp op) {
  check_reduction(CommOp::AllReduce, t, op);
  Work w;
  w.op = CommOp::AllReduce;
  w.send = send, w.recv = recv, w.count = count, w.dtype = t, w.rop = op;
  return impl_->enqueue(std::move(w));
}

CommHandlePtr MpiCommunicator::reduce_scatter_async(const void* send, void* recv, size_t count, DType t,
                                                    ReduceOp op) {
  check_even_split(CommOp::ReduceScatter, count, impl_->world);
  check_reduction(CommOp::ReduceScatter, t, op);
  Work w;
  w.op = CommOp::ReduceScatter;
  w.send = send, w.recv = recv, w.count = count, w.dtype = t, w.rop = op;
  return impl_->enqueue(std::move(w));
}

CommHandlePtr MpiCommunicator::all_gather_async(const void* send, void* recv, size_t count, DType t) {
  check_even_split(CommOp::AllGather, count, impl_->world);
  Work w;
  w.op = CommOp::AllGather;
  w.send = send, w.recv = recv, w.count = count, w.dtype = t;
  return impl_->enqueue(std::move(w));
}

CommHandlePtr MpiCommunicator::broadcast_async(void* buf, size_t count, DType t, int root) {
  check_root(root, impl_->world);
  Work w;
  w.op = CommOp::Broadcast;
  w.recv = buf, w.count = count, w.dtype = t, w.root = root;
  return impl_->enqueue(std::move(w));
}

CommHandlePtr MpiCommunicator::all_to_all_async(const void* send, void* recv, size_t count, DType t) {
  check_all_to_all(send, recv, count, t, impl_->world);
  Work w;
  w.op = CommOp::AllToAll;
  w.send = send, w.recv = recv, w.count = count, w.dtype = t;
  return impl_->enqueue(std::move(w));
}

CommHandlePtr MpiCommunicator::barrier_async() { return impl_->enqueue(Work{}); }

namespace {
Work segment_work(CommOp op, const std::vector<Segment>& segments, DType t, ReduceOp rop, int world) {
  Work w;
  w.op = op;
  w.segmented = true;
  w.segments = segments;
  w.count = check_segments(op, segments, world, size_t(INT_MAX));
  w.dtype = t;
  w.rop = rop;
  return w;
}
}  // namespace

CommHandlePtr MpiCommunicator::reduce_scatter_segments_async(const std::vector<Segment>& segments, DType t,
                                                             ReduceOp op) {
  check_reduction(CommOp::ReduceScatter, t, op);
  return impl_->enqueue(segment_work(CommOp::ReduceScatter, segments, t, op, impl_->world));
}

CommHandlePtr MpiCommunicator::all_reduce_segments_async(const std::vector<Segment>& segments, DType t, ReduceOp op) {
  check_reduction(CommOp::AllReduce, t, op);
  return impl_->enqueue(segment_work(CommOp::AllReduce, segments, t, op, impl_->world));
}

CommHandlePtr MpiCommunicator::all_gather_segments_async(const std::vector<Segment>& segments, DType t) {
  return impl_->enqueue(segment_work(CommOp::AllGather, segments, t, ReduceOp::Sum, impl_->world));
}

}  // namespace zt
