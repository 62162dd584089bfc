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
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "collectives/comm_common.h"
#include "collectives/comm_handle.h"
#include "collectives/fixed_order_reduce.h"
#include "base/mpi_check.h"
#include "collectives/peer_status.h"
#include "collectives/rank_list.h"
#include "collectives/topology.h"

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
    case DType::U8: return MPI_UINT8_T;
  }
  return MPI_BYTE;
}

// n elements cut into `parts` consecutive runs, the first n % parts one longer: counts and starts.
void balanced(size_t n, int parts, std::vector<int>& counts, std::vector<int>& starts) {
  counts.assign(size_t(parts), 0);
  starts.assign(size_t(parts), 0);
  const size_t base = n / size_t(parts), rem = n % size_t(parts);
  for (int j = 0, off = 0; j < parts; ++j) {
    counts[size_t(j)] = int(base + (size_t(j) < rem ? 1 : 0));
    starts[size_t(j)] = off;
    off += counts[size_t(j)];
  }
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
  bool executing = false;  // a queued call is running (on the communication thread or inline)
  std::thread::id blocking_caller;  // its next call is a blocking one: queued without a wake-up

  // The "current op" record the watchdog watches. The communication thread sets it without waking
  // the watchdog (a wake-up per call costs a context switch where ranks share cores): the watchdog
  // sleeps until the current call's deadline, or one timeout while idle, and re-reads it then.
  struct Watched {
    CommOp op = CommOp::Barrier;
    size_t count = 0;
    uint64_t seq = 0;
  };
  std::mutex wd_mu;  // guards the record; wd_cv wakes the watchdog only to stop it
  std::condition_variable wd_cv;
  bool wd_active = false, wd_stop = false;
  uint64_t wd_settings = 0;  // bumped by set_timeout_s: the watchdog re-arms
  Watched wd_work;
  Clock::time_point wd_start;

  // Names the members that did not arrive when the watchdog fires; shared by the world and its groups.
  // This communicator's channel on it, how many groups were split from it, its members' world ranks.
  std::shared_ptr<PeerStatus> peers;
  uint64_t channel = 0, splits = 0;
  std::vector<int> world_ranks;

  // Where the members sit (set_node_layout, or inherited at split): each member's node (0, 1, ... in
  // order of first appearance), the group's shape, and over several nodes the sub-communicators the
  // collectives run on: this rank's node, and (two levels) the members of its local index on every node.
  std::vector<int> node_of;
  GroupLayout layout;
  MPI_Comm node_comm = MPI_COMM_NULL, cross_comm = MPI_COMM_NULL;
  int local = 0, node_index = 0;  // two levels: rank = node_index · per_node + local

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
    bool wake = true;
    {
      std::lock_guard<std::mutex> lock(q_mu);
      w.seq = next_seq++;
      w.handle->set_helper([this, seq = w.seq] { return run_inline(seq); });
      queue.push_back(std::move(w));
      if (blocking_caller == std::this_thread::get_id()) {
        blocking_caller = {};
        wake = false;  // the caller waits at once and runs it, or the busy thread takes it in turn
      }
    }
    if (wake) q_cv.notify_one();
    return h;
  }

  // One queued call, on whichever thread runs it (the communication thread, or a caller waiting on
  // it: see run_inline); `executing` keeps it to one at a time, in issue order.
  void execute(Work& w) {
    auto t0 = Clock::now();
    {
      std::lock_guard<std::mutex> lock(wd_mu);
      wd_work = {w.op, w.count, w.seq};
      wd_start = t0;
      wd_active = true;
    }
    if (peers) peers->begin(channel, w.seq, w.op, w.count);
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
    if (peers) peers->end(channel, w.seq);
    double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    if (!err) stats.add(w.op, comm_algorithm_bytes(w.op, w.count, w.dtype), secs);
    w.handle->complete(err);
  }

  void comm_loop() {
    for (;;) {
      Work w;
      {
        std::unique_lock<std::mutex> lock(q_mu);
        q_cv.wait(lock, [&] { return (stopping && !executing) || (!queue.empty() && !executing); });
        if (queue.empty()) return;  // stopping and drained
        w = std::move(queue.front());
        queue.pop_front();
        executing = true;
      }
      execute(w);
      std::lock_guard<std::mutex> lock(q_mu);
      executing = false;
    }
  }

  // A caller waiting on call `seq`: when it is next in line and nothing runs, the caller runs it
  // itself (saving the two thread switches a hand-off costs). Returns whether it ran.
  bool run_inline(uint64_t seq) {
    Work w;
    {
      std::lock_guard<std::mutex> lock(q_mu);
      if (executing || queue.empty() || queue.front().seq != seq) return false;
      w = std::move(queue.front());
      queue.pop_front();
      executing = true;
    }
    execute(w);
    bool more;
    {
      std::lock_guard<std::mutex> lock(q_mu);
      executing = false;
      more = !queue.empty() || stopping;
    }
    if (more) q_cv.notify_one();
    return true;
  }

  // Which communicator a message is about: the world, or a group named by its members' world ranks.
  std::string group_name() const {
    if (world_ranks.size() == size_t(peers ? peers->world_size() : world) && channel == 0)
      return "the world (" + std::to_string(world) + " ranks)";
    return "a group of " + std::to_string(world) + " (world " + rank_list(world_ranks) + ")";
  }

  // A member named by its world rank ("rank 5"), the way every message names ranks.
  std::string member(int group_rank) const {
    return "rank " + std::to_string(world_ranks.empty() ? group_rank : world_ranks[size_t(group_rank)]);
  }

  void watchdog_loop() {
    std::unique_lock<std::mutex> lock(wd_mu);
    while (!wd_stop) {
      const double limit = timeout_s.load();
      const auto span = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limit));
      const uint64_t settings = wd_settings;
      auto woken = [&] { return wd_stop || wd_settings != settings; };
      if (!wd_active) {  // a call that starts meanwhile is seen on waking, before its own deadline
        wd_cv.wait_for(lock, span, woken);
        continue;
      }
      const uint64_t seq = wd_work.seq;
      const auto deadline = wd_start + span;
      if (wd_cv.wait_until(lock, deadline, woken)) continue;
      if (!wd_active || wd_work.seq != seq || Clock::now() < deadline) continue;  // moved on: re-arm
      const std::string call = describe(wd_work.op, wd_work.count);
      lock.unlock();  // the peers' answers take up to two seconds
      PeerStatus::Report who;
      if (peers) who = peers->report(channel, seq, world_ranks, limit);
      if (who.text.empty()) who.text = "a peer rank may have died, hung, or called a different collective";
      LauncherLinkCheck launcher = launcher_link_check();
      if (launcher.seconds > 120) launcher = {};  // minutes: not worth waiting for
      // A lower member waits in the same hang and reports it: stay quiet while the job ends, and speak
      // only if it has not ended well after that member's report (its own wait included).
      if (who.defer) std::this_thread::sleep_for(std::chrono::duration<double>(launcher.seconds + 15.0));
      const int me = peers ? peers->world_rank() : rank;
      std::string end = "Aborting the job.";
      if (who.host_lost && launcher.seconds > 0)
        end = "The launcher's own link check ends the job within " + std::to_string(int(launcher.seconds)) + " s (" +
              launcher.source + ").";
      else if (who.host_lost)
        end = "Aborting the job; if mpirun does not exit, its daemons wait on the lost link: launch with " +
              launcher_link_check_hint(limit) + " (docs/across-nodes.md).";
      std::fprintf(stderr,
                   "[rank %d] zerotrain: collective %s #%llu on %s did not complete within %g s; %s. To wait longer "
                   "set ZT_COMM_TIMEOUT_S=<seconds> (now %g). %s\n",
                   me, call.c_str(), (unsigned long long)seq, group_name().c_str(), limit, who.text.c_str(), limit,
                   end.c_str());
      std::fflush(stderr);
      // With a host cut off, an abort sent now queues data on the dead link, and TCP then retries for
      // many minutes before the launcher sees it: let the launcher's idle-link check end the job first.
      if (who.host_lost && launcher.seconds > 0)
        std::this_thread::sleep_for(std::chrono::duration<double>(launcher.seconds));
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
      if (f[kFpSeq] != f0[kFpSeq]) at += " (" + member(r) + "'s call #" + std::to_string(f[kFpSeq]) + ")";
      // Every member sees the same table: the group's rank 0 says it once and ends the job; the others
      // wait for that (and end it themselves only if it has not happened).
      if (rank != 0) std::this_thread::sleep_for(std::chrono::seconds(10));
      std::fprintf(stderr, "[rank %d] zerotrain: collective mismatch on %s: %s called %s while %s called %s %s. Aborting the job.\n",
                   peers ? peers->world_rank() : rank, group_name().c_str(), member(r).c_str(),
                   describe_fp(f, detailed).c_str(), member(0).c_str(), describe_fp(f0, detailed).c_str(), at.c_str());
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

  void free_levels() {
    if (node_comm != MPI_COMM_NULL) MPI_Comm_free(&node_comm);
    if (cross_comm != MPI_COMM_NULL) MPI_Comm_free(&cross_comm);
  }

  // Collective over comm with the communication thread idle.
  void set_layout(const std::vector<int>& nodes) {
    free_levels();
    std::map<int, int> index;
    node_of.assign(nodes.size(), 0);
    for (size_t i = 0; i < nodes.size(); ++i) {
      auto it = index.emplace(nodes[i], int(index.size())).first;
      node_of[i] = it->second;
    }
    layout = GroupLayout::of(node_of);
    if (layout.nodes > 1) {
      ZT_MPI_CHECK(MPI_Comm_split(comm, node_of[size_t(rank)], rank, &node_comm), "the node level of a collective group");
      ZT_MPI_CHECK(MPI_Comm_set_errhandler(node_comm, MPI_ERRORS_RETURN));
    }
    if (layout.two_level()) {
      local = rank % layout.per_node;
      node_index = rank / layout.per_node;
      ZT_MPI_CHECK(MPI_Comm_split(comm, local, rank, &cross_comm), "the cross-node level of a collective group");
      ZT_MPI_CHECK(MPI_Comm_set_errhandler(cross_comm, MPI_ERRORS_RETURN));
    }
  }

  // A group that mixes ranks of one node with ranks of others without two levels: every block is
  // sent straight to each peer, so that what crosses nodes is known (LinkModel's direct case).
  bool direct() const { return layout.nodes > 1 && layout.nodes < world && !layout.two_level(); }

  // An in-place all-gather of blocks (counts, starts in elements) over this communicator.
  void gather_blocks(void* buf, const std::vector<int>& counts, const std::vector<int>& starts, DType t,
                     const std::string& ctx) {
    const MPI_Datatype dt = mpi_type(t);
    if (!direct()) {
      ZT_MPI_CHECK(MPI_Allgatherv(MPI_IN_PLACE, 0, dt, buf, counts.data(), starts.data(), dt, comm), ctx);
      return;
    }
    const size_t nw = size_t(world);
    std::vector<int> sc(nw, counts[size_t(rank)]), sd(nw, 0), rc(counts);
    sc[size_t(rank)] = 0;
    rc[size_t(rank)] = 0;
    const char* mine = static_cast<const char*>(buf) + size_t(starts[size_t(rank)]) * dtype_size(t);
    ZT_MPI_CHECK(MPI_Alltoallv(mine, sc.data(), sd.data(), dt, buf, rc.data(), starts.data(), dt, comm), ctx);
  }

  void reserve(uint64_t largest_call_bytes) {
    std::lock_guard<std::mutex> lock(buf_mu);
    chunk = size_t(comm_chunk_bytes(largest_call_bytes, cap));
    scratch.resize(chunk);
    pack.resize(chunk);
    held.store(scratch.size + pack.size);
  }

  // Elements of one chunk: an all-reduce of n elements needs ceil(n/W)·W of scratch.
  size_t chunk_elems(size_t es) const { return std::max<size_t>(1, chunk / es - size_t(world - 1)); }

  // Block q of src (counts, starts in elements) to rank q, and every rank's block of this rank's
  // `mine` elements into scratch: the rows of a rank-order fold, this rank's own read where it lies
  // in src (never copied next to the others).
  std::vector<const void*> exchange_rows(const void* src, const std::vector<int>& counts, const std::vector<int>& starts,
                                         int mine, DType t, const std::string& ctx) {
    const size_t es = dtype_size(t), nw = size_t(world);
    std::vector<int> sc(counts), rc(nw, mine), rd(nw, 0);
    sc[size_t(rank)] = 0;
    rc[size_t(rank)] = 0;
    for (size_t i = 0; i < nw; ++i) rd[i] = int(i) * mine;
    char* rows = scratch_bytes(size_t(mine) * nw * es);
    const MPI_Datatype dt = mpi_type(t);
    ZT_MPI_CHECK(MPI_Alltoallv(src, sc.data(), starts.data(), dt, rows, rc.data(), rd.data(), dt, comm), ctx);
    std::vector<const void*> list(nw);
    for (size_t i = 0; i < nw; ++i) list[i] = rows + i * size_t(mine) * es;
    list[size_t(rank)] = static_cast<const char*>(src) + size_t(starts[size_t(rank)]) * es;
    return list;
  }

  // All-reduce of `count` elements from send into recv (they may be the same buffer): block j
  // (balanced: the first count%W blocks one element longer) is reduced by rank j in rank order,
  // then every block is gathered.
  void all_reduce_flat(const void* send, void* recv, size_t count, DType t, ReduceOp rop, const std::string& ctx) {
    if (!count) return;
    const size_t es = dtype_size(t);
    if (layout.two_level()) {
      if (send != recv) std::memcpy(recv, send, count * es);
      all_reduce_two_level(recv, count, t, rop, ctx);
      return;
    }
    std::vector<int> counts, starts;
    balanced(count, world, counts, starts);
    const int mine = counts[size_t(rank)];
    const std::vector<const void*> rows = exchange_rows(send, counts, starts, mine, t, ctx);
    char* out = static_cast<char*>(recv) + size_t(starts[size_t(rank)]) * es;
    reduce_row_list(rows.data(), size_t(mine), world, t, rop == ReduceOp::Avg ? world : 0, out);
    gather_blocks(recv, counts, starts, t, ctx);
  }

  // One piece of a two-level all-reduce on its way through the levels.
  struct ReducePiece {
    char* base = nullptr;  // the piece's first element in the buffer
    std::vector<int> len, start, sub, sub_start;  // its n parts inside the node; this part's N sub-parts
    std::vector<int> rc, rd;  // the crossing rows' counts and places (MPI reads them until it completes)
    char* part = nullptr;  // this rank's part (local index l) of the piece
    char* rows = nullptr;  // the N sub-part rows that crossed
    MPI_Request req = MPI_REQUEST_NULL;
    bool crossing = false;  // the sub-parts are being exchanged (else: gathered, or nothing crosses)
  };

  // Two levels, in place, a piece at a time: part l of a piece (n balanced parts) is reduced inside
  // each node by local rank l in local order, that node partial is all-reduced across nodes over the
  // cross group (each node's partial folded in node order), and the parts are gathered inside each
  // node. Pipelined: while piece k is reduced inside the node, piece k-1's partials cross and piece
  // k-2's are gathered back across, so the link is not idle while the node works. Each element is
  // folded as in one call. Scratch: n rows of a part, and two pieces' crossing rows. A piece is an
  // eighth of the call, at least 1 MiB (fewer pieces, fewer latencies waited; see piece_elems).
  void all_reduce_two_level(void* buf, size_t count, DType t, ReduceOp rop, const std::string& ctx) {
    const size_t es = dtype_size(t);
    const MPI_Datatype dt = mpi_type(t);
    const int N = layout.nodes, n = layout.per_node;
    const size_t piece = std::min(std::max<size_t>(1, chunk / es / 4), std::max((count + 7) / 8, (size_t(1) << 20) / es));
    const size_t part_max = piece / size_t(n) + 1, cross_max = part_max / size_t(N) + 1;
    char* const rows_at = scratch_bytes((part_max * size_t(n) + 2 * cross_max * size_t(N)) * es);
    char* const cross_rows[2] = {rows_at + part_max * size_t(n) * es,
                                 rows_at + (part_max * size_t(n) + cross_max * size_t(N)) * es};
    auto fold_across = [&](ReducePiece& p) {  // the partials have crossed: fold in node order, gather back
      ZT_MPI_CHECK(MPI_Wait(&p.req, MPI_STATUS_IGNORE), ctx);
      const int m = p.sub[size_t(node_index)];
      reduce_rows(p.rows, size_t(m), N, t, rop == ReduceOp::Avg ? world : 0, p.part + size_t(p.sub_start[size_t(node_index)]) * es);
      ZT_MPI_CHECK(MPI_Iallgatherv(MPI_IN_PLACE, 0, dt, p.part, p.sub.data(), p.sub_start.data(), dt, cross_comm, &p.req),
                   ctx);
      p.crossing = false;
    };
    auto gather_inside = [&](ReducePiece& p) {
      if (p.crossing) fold_across(p);
      ZT_MPI_CHECK(MPI_Wait(&p.req, MPI_STATUS_IGNORE), ctx);
      ZT_MPI_CHECK(MPI_Allgatherv(MPI_IN_PLACE, 0, dt, p.base, p.len.data(), p.start.data(), dt, node_comm), ctx);
    };
    std::deque<ReducePiece> flying;
    int slot = 0;
    for (size_t off = 0; off < count; off += piece, slot ^= 1) {
      ReducePiece& p = flying.emplace_back();
      p.base = static_cast<char*>(buf) + off * es;
      balanced(std::min(piece, count - off), n, p.len, p.start);
      const int mine = p.len[size_t(local)];
      std::vector<int> rc(static_cast<size_t>(n), mine), rd(size_t(n), 0);
      for (int j = 0; j < n; ++j) rd[size_t(j)] = j * mine;
      ZT_MPI_CHECK(MPI_Alltoallv(p.base, p.len.data(), p.start.data(), dt, rows_at, rc.data(), rd.data(), dt, node_comm),
                   ctx);
      p.part = p.base + size_t(p.start[size_t(local)]) * es;
      reduce_rows(rows_at, size_t(mine), n, t, 0, p.part);  // the node's partial of part `local`
      if (mine > 0) {  // the same on every member of the cross group (one local index)
        balanced(size_t(mine), N, p.sub, p.sub_start);
        const int m = p.sub[size_t(node_index)];
        p.rc.assign(size_t(N), m);
        p.rd.assign(size_t(N), 0);
        for (int k = 0; k < N; ++k) p.rd[size_t(k)] = k * m;
        p.rows = cross_rows[slot];
        p.crossing = true;
        ZT_MPI_CHECK(MPI_Ialltoallv(p.part, p.sub.data(), p.sub_start.data(), dt, p.rows, p.rc.data(), p.rd.data(), dt,
                                    cross_comm, &p.req),
                     ctx);
      }
      if (flying.size() >= 2 && flying[flying.size() - 2].crossing) fold_across(flying[flying.size() - 2]);
      if (flying.size() >= 3) {
        gather_inside(flying.front());
        flying.pop_front();
      }
    }
    for (ReducePiece& p : flying) gather_inside(p);
  }

  // The same, chunk by chunk (each element's fold does not depend on the chunk it is in).
  void all_reduce_chunked(const void* send, void* recv, size_t count, DType t, ReduceOp rop, const std::string& ctx) {
    const size_t es = dtype_size(t), step = chunk_elems(es);
    for (size_t off = 0; off < count; off += step)
      all_reduce_flat(static_cast<const char*>(send) + off * es, static_cast<char*>(recv) + off * es,
                      std::min(step, count - off), t, rop, ctx);
  }

  // Reduce-scatter of `count` elements (count/W per rank), moved `per_rank` elements of every
  // rank's shard at a time: chunk a sends elements [q·shard + a, q·shard + a + m) to rank q.
  void reduce_scatter_chunked(const Work& w, const std::string& ctx) {
    if (layout.two_level()) {
      reduce_scatter_two_level(w, ctx);
      return;
    }
    const size_t es = dtype_size(w.dtype), shard = w.count / size_t(world);
    const size_t per_rank = std::max<size_t>(1, chunk / es / size_t(world));
    std::vector<int> counts(static_cast<size_t>(world)), starts(static_cast<size_t>(world));
    for (size_t a = 0; a < shard; a += per_rank) {
      const size_t m = std::min(per_rank, shard - a);
      for (int q = 0; q < world; ++q) {
        counts[size_t(q)] = int(m);
        starts[size_t(q)] = int(size_t(q) * shard + a);
      }
      const std::vector<const void*> rows = exchange_rows(w.send, counts, starts, int(m), w.dtype, ctx);
      reduce_row_list(rows.data(), m, world, w.dtype, w.rop == ReduceOp::Avg ? world : 0,
                      static_cast<char*>(w.recv) + a * es);
    }
  }

  // Elements of every rank's shard one piece of a two-level call carries: about an eighth of the
  // shard (so the pieces can flow through both levels at once, see below), at least 256 KiB a rank,
  // and two pieces' rows in each working buffer. With two pieces in flight a call waits about one
  // link latency per two pieces: at 32 KiB, small calls (stage 3's gathers of small units) were cut
  // into up to 8 and with 2 ms of latency `small`'s stage 3 step took 203 ms (132 now), while pieces of
  // 256 KiB and more keep a 1 Gbit/s link as busy (bench/RESULTS.md, "Latency on the link").
  size_t piece_elems(size_t shard, size_t es) const {
    const size_t fit = std::max<size_t>(1, chunk / es / (2 * size_t(world)));
    const size_t want = std::max((shard + 7) / 8, (size_t(256) << 10) / es);
    return std::min(fit, want);
  }

  // A cross-node exchange in flight (non-blocking), with the arrays MPI reads until it completes.
  struct InFlight {
    MPI_Request req = MPI_REQUEST_NULL;
    size_t a = 0, m = 0;  // the piece: elements [a, a + m) of every shard
    char* rows = nullptr;
    std::vector<int> counts, starts;
  };

  // Two levels, a piece (`m` elements of every shard) at a time: the piece is packed by column (local
  // index l: the shards of ranks (0, l), (1, l), ..., (N-1, l)), each node's ranks exchange columns
  // and fold their own in local order (the node partial, what crosses), then the cross group
  // exchanges each owner's part of it and folds in node order. Pipelined: piece k's exchange inside
  // the node runs while piece k-1's partials cross (two pieces' buffers, alternating), so the link is
  // not idle while the node works; every element is folded exactly as in one piece.
  void reduce_scatter_two_level(const Work& w, const std::string& ctx) {
    const size_t es = dtype_size(w.dtype), shard = w.count / size_t(world);
    const size_t per_rank = piece_elems(shard, es), slot_bytes = size_t(world) * per_rank * es;
    const MPI_Datatype dt = mpi_type(w.dtype);
    const int N = layout.nodes, n = layout.per_node;
    const char* src = static_cast<const char*>(w.send);
    char* const packs = pack_bytes(2 * slot_bytes);
    char* const rows_at = scratch_bytes(2 * slot_bytes);
    InFlight flight[2];
    auto land = [&](InFlight& f) {  // a piece's partials have crossed: fold them in node order
      if (f.req == MPI_REQUEST_NULL) return;
      ZT_MPI_CHECK(MPI_Wait(&f.req, MPI_STATUS_IGNORE), ctx);
      reduce_rows(f.rows, f.m, N, w.dtype, w.rop == ReduceOp::Avg ? world : 0, static_cast<char*>(w.recv) + f.a * es);
    };
    int slot = 0;
    for (size_t a = 0; a < shard; a += per_rank, slot ^= 1) {
      InFlight& f = flight[slot];
      land(f);  // the piece two back used this slot's buffers
      const size_t m = std::min(per_rank, shard - a);
      char* pk = packs + size_t(slot) * slot_bytes;
      char* rows = rows_at + size_t(slot) * slot_bytes;
      for (int l = 0; l < n; ++l)
        for (int k = 0; k < N; ++k)
          std::memcpy(pk + (size_t(l) * size_t(N) + size_t(k)) * m * es, src + ((size_t(k) * size_t(n) + size_t(l)) * shard + a) * es,
                      m * es);
      ZT_MPI_CHECK(MPI_Alltoall(pk, int(size_t(N) * m), dt, rows, int(size_t(N) * m), dt, node_comm), ctx);
      reduce_rows(rows, size_t(N) * m, n, w.dtype, 0, pk);  // the node partial of this rank's column
      f.a = a, f.m = m, f.rows = rows;
      f.counts.assign(size_t(N), int(m));
      f.starts.assign(size_t(N), 0);
      for (int k = 0; k < N; ++k) f.starts[size_t(k)] = int(size_t(k) * m);
      ZT_MPI_CHECK(MPI_Ialltoallv(pk, f.counts.data(), f.starts.data(), dt, rows, f.counts.data(), f.starts.data(), dt,
                                  cross_comm, &f.req),
                   ctx);
    }
    land(flight[slot]);  // the older of the last two first
    land(flight[slot ^ 1]);
  }

  // Two levels, a piece at a time: this rank's part of the piece goes to its local index's rank on
  // every other node (so each shard crosses to each node once), then each node's ranks exchange their
  // columns. Pipelined: piece k+1 crosses while the node exchanges piece k.
  void all_gather_two_level(const Work& w, const std::string& ctx) {
    const size_t es = dtype_size(w.dtype), shard = w.count / size_t(world);
    const size_t per_rank = piece_elems(shard, es);
    const MPI_Datatype dt = mpi_type(w.dtype);
    const int N = layout.nodes, n = layout.per_node;
    char* dst = static_cast<char*>(w.recv);
    const char* src = static_cast<const char*>(w.send);
    const size_t col_bytes = size_t(N) * per_rank * es;
    char* const cols = pack_bytes(2 * col_bytes);
    char* const all = scratch_bytes(size_t(world) * per_rank * es);
    MPI_Request req[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    auto cross = [&](size_t a, int slot) {
      const size_t m = std::min(per_rank, shard - a);
      ZT_MPI_CHECK(MPI_Iallgather(src + a * es, int(m), dt, cols + size_t(slot) * col_bytes, int(m), dt, cross_comm,
                                  &req[slot]),
                   ctx);
    };
    cross(0, 0);
    int slot = 0;
    for (size_t a = 0; a < shard; a += per_rank, slot ^= 1) {
      const size_t m = std::min(per_rank, shard - a);
      if (a + per_rank < shard) cross(a + per_rank, slot ^ 1);  // its slot's last piece was unpacked
      ZT_MPI_CHECK(MPI_Wait(&req[slot], MPI_STATUS_IGNORE), ctx);
      char* col = cols + size_t(slot) * col_bytes;
      ZT_MPI_CHECK(MPI_Allgather(col, int(size_t(N) * m), dt, all, int(size_t(N) * m), dt, node_comm), ctx);
      for (int l = 0; l < n; ++l)
        for (int k = 0; k < N; ++k)
          std::memcpy(dst + ((size_t(k) * size_t(n) + size_t(l)) * shard + a) * es, all + (size_t(l) * size_t(N) + size_t(k)) * m * es,
                      m * es);
    }
  }

  // A segment list's two-level layout: owner q's elements start at at[q] in the packed buffer,
  // which holds column l (the owners (0, l), ..., (N-1, l), each in list order) at [start[l], +len[l]).
  struct Columns {
    std::vector<int> owned, at, start, len;
  };
  Columns columns(const std::vector<Segment>& segs) const {
    const int N = layout.nodes, n = layout.per_node;
    Columns c;
    c.owned = owned_counts(segs);
    c.at.assign(size_t(world), 0);
    c.start.assign(size_t(n), 0);
    c.len.assign(size_t(n), 0);
    int off = 0;
    for (int l = 0; l < n; ++l) {
      c.start[size_t(l)] = off;
      for (int k = 0; k < N; ++k) {
        const int q = k * n + l;
        c.at[size_t(q)] = off;
        off += c.owned[size_t(q)];
      }
      c.len[size_t(l)] = off - c.start[size_t(l)];
    }
    return c;
  }
  // Copies the segments of owner q (every owner when q < 0, all but `skip`) to or from the packed buffer.
  static void pack_segments(const std::vector<Segment>& segs, const Columns& c, char* buf, size_t es, bool to_buf, int q,
                            int skip = -1) {
    std::vector<int> cursor(c.at);
    for (const Segment& s : segs) {
      int& at = cursor[size_t(s.owner)];
      if ((q < 0 || s.owner == q) && s.owner != skip) {
        if (to_buf) std::memcpy(buf + size_t(at) * es, s.data, s.count * es);
        else std::memcpy(s.data, buf + size_t(at) * es, s.count * es);
      }
      at += int(s.count);
    }
  }

  // One segment list of a two-level reduce-scatter or all-gather on its way through the levels.
  struct ListInFlight {
    const std::vector<Segment>* segs = nullptr;
    Columns c;
    char* buf = nullptr;   // the list packed by column
    char* rows = nullptr;  // reduce-scatter: the node partials that crossed
    std::vector<int> piece, piece_at, rc, rd;  // what crosses, per node (MPI reads them until done)
    MPI_Request req = MPI_REQUEST_NULL;
    bool active = false;
  };

  void begin_list(ListInFlight& f, const std::vector<Segment>& segs, char* buf) const {
    const int N = layout.nodes, n = layout.per_node;
    f.segs = &segs;
    f.c = columns(segs);
    f.buf = buf;
    f.piece.assign(size_t(N), 0);  // each owner's part of this rank's column
    f.piece_at.assign(size_t(N), 0);
    for (int k = 0; k < N; ++k) {
      f.piece[size_t(k)] = f.c.owned[size_t(k * n + local)];
      f.piece_at[size_t(k)] = f.c.at[size_t(k * n + local)] - f.c.start[size_t(local)];
    }
    f.active = true;
  }

  // A two-level reduce-scatter or all-gather over segments, in lists of about an eighth of the call
  // (at least 32 KiB a rank) that flow through both levels two at a time, as the plain calls' pieces
  // do: each slot of the pack buffer holds one list packed by column; the receive buffer holds a
  // list's rows inside the node and two lists' crossing rows. Lists are cut by counts and owners
  // alone, the same on every rank.
  void run_segments_two_level(const Work& w, const std::string& ctx) {
    const size_t es = dtype_size(w.dtype);
    const size_t total = std::min(std::max<size_t>(size_t(world), chunk / es / 3),
                                  std::max((w.count + 7) / 8, (size_t(32) << 10) / es * size_t(world)));
    // A reduce-scatter's rows inside the node are n columns of at most N owners' parts each.
    const size_t per_owner = w.op == CommOp::ReduceScatter ? std::max<size_t>(1, total / size_t(world)) : total;
    std::vector<std::vector<Segment>> cut;
    std::vector<const std::vector<Segment>*> lists;
    if (w.count <= total && (w.op != CommOp::ReduceScatter || fits_per_owner(w.segments, per_owner))) {
      lists.push_back(&w.segments);
    } else {
      cut = cut_segments(w.segments, es, total, per_owner, world);
      for (const auto& l : cut) lists.push_back(&l);
    }
    char* const packs = pack_bytes(2 * total * es);
    if (w.op == CommOp::ReduceScatter) reduce_scatter_lists(w, lists, packs, total, ctx);
    else all_gather_lists(w, lists, packs, total, ctx);
  }

  // Reduce-scatter: list k is exchanged and folded inside the node while list k-1's partials cross.
  void reduce_scatter_lists(const Work& w, const std::vector<const std::vector<Segment>*>& lists, char* packs,
                            size_t total, const std::string& ctx) {
    const size_t es = dtype_size(w.dtype);
    const MPI_Datatype dt = mpi_type(w.dtype);
    const int N = layout.nodes, n = layout.per_node;
    char* const inside = scratch_bytes((total + 2 * (total / size_t(n) + 1)) * es);
    char* const crossing[2] = {inside + total * es, inside + (total + total / size_t(n) + 1) * es};
    ListInFlight flight[2];
    auto land = [&](ListInFlight& f) {  // the partials have crossed: fold in node order, unpack own
      if (!f.active) return;
      ZT_MPI_CHECK(MPI_Wait(&f.req, MPI_STATUS_IGNORE), ctx);
      const int mine = f.c.owned[size_t(rank)];
      char* own = f.buf + size_t(f.c.at[size_t(rank)]) * es;  // the packed buffer's place for this rank's elements
      reduce_rows(f.rows, size_t(mine), N, w.dtype, w.rop == ReduceOp::Avg ? world : 0, own);
      pack_segments(*f.segs, f.c, f.buf, es, false, rank);
      f.active = false;
    };
    int slot = 0;
    for (const std::vector<Segment>* segs : lists) {
      ListInFlight& f = flight[slot];
      land(f);  // the list two back used this slot
      begin_list(f, *segs, packs + size_t(slot) * total * es);
      const int mine = f.c.owned[size_t(rank)], col = f.c.len[size_t(local)];
      pack_segments(*segs, f.c, f.buf, es, true, -1);
      std::vector<int> rc(static_cast<size_t>(n), col), rd(size_t(n), 0);
      for (int l = 0; l < n; ++l) rd[size_t(l)] = l * col;
      ZT_MPI_CHECK(MPI_Alltoallv(f.buf, f.c.len.data(), f.c.start.data(), dt, inside, rc.data(), rd.data(), dt, node_comm),
                   ctx);
      reduce_rows(inside, size_t(col), n, w.dtype, 0, f.buf);  // the node partial of this rank's column
      f.rc.assign(size_t(N), mine);
      f.rd.assign(size_t(N), 0);
      for (int k = 0; k < N; ++k) f.rd[size_t(k)] = k * mine;
      f.rows = crossing[slot];
      ZT_MPI_CHECK(MPI_Ialltoallv(f.buf, f.piece.data(), f.piece_at.data(), dt, f.rows, f.rc.data(), f.rd.data(), dt,
                                  cross_comm, &f.req),
                   ctx);
      slot ^= 1;
    }
    land(flight[slot]);  // the older of the last two first
    land(flight[slot ^ 1]);
  }

  // All-gather: this rank's elements of list k+1 cross to its column on every node while the node's
  // ranks exchange list k's columns.
  void all_gather_lists(const Work& w, const std::vector<const std::vector<Segment>*>& lists, char* packs, size_t total,
                        const std::string& ctx) {
    const size_t es = dtype_size(w.dtype);
    const MPI_Datatype dt = mpi_type(w.dtype);
    ListInFlight flight[2];
    auto cross = [&](size_t k) {
      ListInFlight& f = flight[k % 2];
      begin_list(f, *lists[k], packs + (k % 2) * total * es);
      pack_segments(*f.segs, f.c, f.buf, es, true, rank);
      ZT_MPI_CHECK(MPI_Iallgatherv(MPI_IN_PLACE, 0, dt, f.buf + size_t(f.c.start[size_t(local)]) * es, f.piece.data(),
                                   f.piece_at.data(), dt, cross_comm, &f.req),
                   ctx);
    };
    if (!lists.empty()) cross(0);
    for (size_t k = 0; k < lists.size(); ++k) {
      if (k + 1 < lists.size()) cross(k + 1);  // its slot's last list was unpacked
      ListInFlight& f = flight[k % 2];
      ZT_MPI_CHECK(MPI_Wait(&f.req, MPI_STATUS_IGNORE), ctx);
      ZT_MPI_CHECK(MPI_Allgatherv(MPI_IN_PLACE, 0, dt, f.buf, f.c.len.data(), f.c.start.data(), dt, node_comm), ctx);
      pack_segments(*f.segs, f.c, f.buf, es, false, -1, rank);
      f.active = false;
    }
  }

  // Broadcast over several nodes: the root sends to the first rank of every other node, then each
  // node broadcasts inside (each node receives the buffer once).
  void broadcast_by_node(const Work& w, const std::string& ctx) {
    const MPI_Datatype dt = mpi_type(w.dtype);
    const int root_node = node_of[size_t(w.root)], my_node = node_of[size_t(rank)];
    std::vector<int> first(static_cast<size_t>(layout.nodes), -1);
    for (int r = 0; r < world; ++r)
      if (first[size_t(node_of[size_t(r)])] < 0) first[size_t(node_of[size_t(r)])] = r;
    constexpr int kTag = 7201;
    if (rank == w.root) {
      std::vector<MPI_Request> reqs;
      for (int k = 0; k < layout.nodes; ++k) {
        if (k == root_node) continue;
        reqs.emplace_back();
        ZT_MPI_CHECK(MPI_Isend(w.recv, int(w.count), dt, first[size_t(k)], kTag, comm, &reqs.back()), ctx);
      }
      ZT_MPI_CHECK(MPI_Waitall(int(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE), ctx);
    } else if (my_node != root_node && rank == first[size_t(my_node)]) {
      ZT_MPI_CHECK(MPI_Recv(w.recv, int(w.count), dt, w.root, kTag, comm, MPI_STATUS_IGNORE), ctx);
    }
    const int node_root = my_node == root_node ? w.root : first[size_t(my_node)];
    int below = 0;  // the node communicator ranks a node's members in world order
    for (int r = 0; r < node_root; ++r) below += node_of[size_t(r)] == my_node;
    ZT_MPI_CHECK(MPI_Bcast(w.recv, int(w.count), dt, below, node_comm), ctx);
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
    if (w.op != CommOp::AllReduce && layout.two_level()) {
      run_segments_two_level(w, ctx);
      return;
    }
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
    std::vector<int> c(static_cast<size_t>(world), 0);
    for (const Segment& s : segs) c[size_t(s.owner)] += int(s.count);
    return c;
  }

  // One list that fits the buffers: packed by owner, moved, reduced or gathered, unpacked.
  void run_segment_list(const Work& w, const std::vector<Segment>& segs, size_t count, const std::string& ctx) {
    const size_t es = dtype_size(w.dtype);
    if (w.op == CommOp::AllReduce) {  // pack, all-reduce in place, unpack
      char* buf = pack_bytes(count * es);
      size_t off = 0;
      for (const Segment& s : segs) std::memcpy(buf + off * es, s.data, s.count * es), off += s.count;
      all_reduce_flat(buf, buf, count, w.dtype, w.rop, ctx);
      off = 0;
      for (const Segment& s : segs) std::memcpy(s.data, buf + off * es, s.count * es), off += s.count;
      return;
    }
    const std::vector<int> counts = owned_counts(segs);
    std::vector<int> displs(static_cast<size_t>(world), 0);
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
      const std::vector<const void*> rows = exchange_rows(buf, counts, displs, mine, w.dtype, ctx);
      reduce_row_list(rows.data(), size_t(mine), world, w.dtype, w.rop == ReduceOp::Avg ? world : 0,
                      buf + size_t(displs[size_t(rank)]) * es);
      pack_owner(rank, false);
      return;
    }
    // All-gather: this rank's owned segments in its block, every block gathered, then unpacked.
    pack_owner(rank, true);
    gather_blocks(buf, counts, displs, w.dtype, ctx);
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
        if (!w.count) return;
        if (layout.nodes > 1) broadcast_by_node(w, ctx);
        else ZT_MPI_CHECK(MPI_Bcast(w.recv, int(w.count), dt, w.root, comm), ctx);
        return;
      case CommOp::AllGather: {
        if (!w.count) return;
        if (layout.two_level()) {
          all_gather_two_level(w, ctx);
          return;
        }
        const size_t shard = w.count / size_t(world);
        const void* own = static_cast<const char*>(w.recv) + size_t(rank) * shard * es;
        if (direct()) {
          if (w.send != own) std::memcpy(const_cast<void*>(own), w.send, shard * es);
          std::vector<int> counts(static_cast<size_t>(world), int(shard)), starts(size_t(world), 0);
          for (int q = 0; q < world; ++q) starts[size_t(q)] = int(size_t(q) * shard);
          gather_blocks(w.recv, counts, starts, w.dtype, ctx);
          return;
        }
        const void* src = (w.send == own) ? MPI_IN_PLACE : w.send;
        ZT_MPI_CHECK(MPI_Allgather(src, int(shard), dt, w.recv, int(shard), dt, comm), ctx);
        return;
      }
      case CommOp::ReduceScatter:
        if (w.count) reduce_scatter_chunked(w, ctx);
        return;
      case CommOp::AllToAll: {
        if (!w.count) return;
        const int each = int(w.count / size_t(world));
        if (layout.nodes == 1) {
          ZT_MPI_CHECK(MPI_Alltoall(w.send, each, dt, w.recv, each, dt, comm), ctx);
          return;
        }
        // Across nodes MPI's all-to-all may relay small blocks through other ranks (Bruck's
        // algorithm): the v form sends each block straight to its rank, so what crosses is known.
        std::vector<int> c(static_cast<size_t>(world), each), d(size_t(world), 0);
        for (int q = 0; q < world; ++q) d[size_t(q)] = q * each;
        ZT_MPI_CHECK(MPI_Alltoallv(w.send, c.data(), d.data(), dt, w.recv, c.data(), d.data(), dt, comm), ctx);
        return;
      }
      case CommOp::AllReduce: {
        if (!w.count) return;
        all_reduce_chunked(w.send, w.recv, w.count, w.dtype, w.rop, ctx);
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
  impl_->peers = std::make_shared<PeerStatus>();  // over COMM_WORLD; the groups split from here share it
  impl_->world_ranks.resize(size_t(impl_->peers->world_size()));
  for (size_t r = 0; r < impl_->world_ranks.size(); ++r) impl_->world_ranks[r] = int(r);
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
  // The members' nodes, from this communicator's layout: each member's rank here.
  MPI_Group mine, theirs;
  ZT_MPI_CHECK(MPI_Comm_group(impl_->comm, &mine));
  ZT_MPI_CHECK(MPI_Comm_group(group->comm, &theirs));
  int size = 0;
  ZT_MPI_CHECK(MPI_Group_size(theirs, &size));
  std::vector<int> members(static_cast<size_t>(size)), here(static_cast<size_t>(size));
  for (int i = 0; i < size; ++i) members[size_t(i)] = i;
  ZT_MPI_CHECK(MPI_Group_translate_ranks(theirs, size, members.data(), mine, here.data()));
  MPI_Group_free(&mine);
  MPI_Group_free(&theirs);
  // Their world ranks and the group's channel, for the watchdog's questions and messages.
  MPI_Group world_group;
  ZT_MPI_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
  ZT_MPI_CHECK(MPI_Comm_group(group->comm, &theirs));
  group->world_ranks.resize(size_t(size));
  ZT_MPI_CHECK(MPI_Group_translate_ranks(theirs, size, members.data(), world_group, group->world_ranks.data()));
  MPI_Group_free(&theirs);
  MPI_Group_free(&world_group);
  group->peers = impl_->peers;
  group->channel = PeerStatus::child_channel(impl_->channel, impl_->splits++, color);
  std::vector<int> nodes(static_cast<size_t>(size), 0);
  if (!impl_->node_of.empty())
    for (int i = 0; i < size; ++i) nodes[size_t(i)] = impl_->node_of[size_t(here[size_t(i)])];
  auto made = std::unique_ptr<MpiCommunicator>(new MpiCommunicator(std::move(group)));
  made->impl_->set_layout(nodes);  // collective over the new group: every member is here
  return made;
}

void MpiCommunicator::set_node_layout(const std::vector<int>& node_of_rank) {
  if (int(node_of_rank.size()) != impl_->world)
    throw std::invalid_argument("set_node_layout: " + std::to_string(node_of_rank.size()) + " nodes for a communicator of " +
                                std::to_string(impl_->world) + " ranks");
  barrier_async()->wait();  // every queued call completed: the communication thread is idle
  // Every rank must pass the same layout: compare a digest of it.
  uint64_t h = 1469598103934665603ull;
  for (int v : node_of_rank) h = (h ^ uint64_t(uint32_t(v))) * 1099511628211ull;
  uint64_t lo_hi[2] = {h, ~h}, max[2] = {0, 0};
  ZT_MPI_CHECK(MPI_Allreduce(lo_hi, max, 2, MPI_UINT64_T, MPI_MAX, impl_->comm), "set_node_layout");
  if (max[0] != h || ~max[1] != h)
    throw std::invalid_argument("set_node_layout: the ranks passed different layouts (every rank must pass the same list)");
  impl_->set_layout(node_of_rank);
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
  impl_->free_levels();
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
  {
    std::lock_guard<std::mutex> lock(impl_->wd_mu);
    impl_->timeout_s.store(s);
    ++impl_->wd_settings;
  }
  impl_->wd_cv.notify_all();  // a watchdog asleep on the old timeout re-arms with this one
}
void MpiCommunicator::set_debug(bool on) { impl_->debug.store(on); }

// A blocking call from a thread that waits at once: queued without waking the communication thread,
// then run by this thread when nothing else runs (a wake-up it would not use costs a context switch
// that, where ranks share cores, takes a core from a peer polling in the same collective).
void MpiCommunicator::blocking(const std::function<CommHandlePtr()>& issue) {
  {
    std::lock_guard<std::mutex> lock(impl_->q_mu);
    impl_->blocking_caller = std::this_thread::get_id();
  }
  CommHandlePtr h;
  try {
    h = issue();
  } catch (...) {  // refused before it was queued: the next call is queued as usual
    std::lock_guard<std::mutex> lock(impl_->q_mu);
    impl_->blocking_caller = {};
    throw;
  }
  h->wait();
}

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
