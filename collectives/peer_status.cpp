// PeerStatus: the progress record, the responder thread on a private communicator, and the
// query with a deadline that turns the answers into a sentence naming the ranks that did not arrive.
#include "collectives/peer_status.h"

#include <mpi.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "base/mpi_check.h"
#include "collectives/rank_list.h"

namespace zt {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kQueryTag = 7101, kReplyTag = 7102;
constexpr auto kPoll = std::chrono::milliseconds(5);

// A reply: the call in flight (0 = none), its op and count, how long it has run, the last completed.
enum { kInFlight, kOp, kCount, kAgeMs, kLastDone, kReplyWords };

std::string call_name(int64_t op, int64_t count, int64_t seq) {
  return std::string(comm_op_name(CommOp(op))) + "(" + std::to_string(count) + ") #" + std::to_string(seq);
}

}  // namespace

struct PeerStatus::Impl {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, world = 1;

  std::mutex mu;  // guards the record and stop
  uint64_t in_flight = 0, last_done = 0;
  CommOp op = CommOp::Barrier;
  size_t count = 0;
  Clock::time_point started;
  bool stop = false;
  std::condition_variable cv;
  std::thread responder;

  void reply_words(int64_t* out) {
    std::lock_guard<std::mutex> lock(mu);
    out[kInFlight] = int64_t(in_flight);
    out[kOp] = int64_t(op);
    out[kCount] = int64_t(count);
    out[kAgeMs] = in_flight ? std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started).count() : 0;
    out[kLastDone] = int64_t(last_done);
  }

  void respond_loop() {
    int64_t query = 0;
    MPI_Request req;
    ZT_MPI_CHECK(MPI_Irecv(&query, 1, MPI_INT64_T, MPI_ANY_SOURCE, kQueryTag, comm, &req), "peer status: listen");
    std::vector<std::vector<int64_t>> replies;  // kept alive until their sends complete
    std::vector<MPI_Request> sends;
    std::unique_lock<std::mutex> lock(mu);
    while (!stop) {
      lock.unlock();
      int got = 0;
      MPI_Status st;
      ZT_MPI_CHECK(MPI_Test(&req, &got, &st), "peer status: poll");
      if (got) {
        replies.emplace_back(kReplyWords);
        reply_words(replies.back().data());
        sends.emplace_back();
        ZT_MPI_CHECK(MPI_Isend(replies.back().data(), kReplyWords, MPI_INT64_T, st.MPI_SOURCE, kReplyTag, comm,
                                   &sends.back()),
                         "peer status: answer");
        ZT_MPI_CHECK(MPI_Irecv(&query, 1, MPI_INT64_T, MPI_ANY_SOURCE, kQueryTag, comm, &req), "peer status: listen");
      }
      lock.lock();
      if (!got) cv.wait_for(lock, kPoll, [&] { return stop; });
    }
    lock.unlock();
    MPI_Cancel(&req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    // Answers still unsent go to a rank that is gone or about to abort the job: drop them.
    for (MPI_Request& s : sends) {
      int done = 0;
      MPI_Test(&s, &done, MPI_STATUS_IGNORE);
      if (!done) MPI_Request_free(&s);
    }
  }
};

PeerStatus::PeerStatus() : impl_(std::make_unique<Impl>()) {
  ZT_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &impl_->comm));
  ZT_MPI_CHECK(MPI_Comm_set_errhandler(impl_->comm, MPI_ERRORS_RETURN));
  ZT_MPI_CHECK(MPI_Comm_rank(impl_->comm, &impl_->rank));
  ZT_MPI_CHECK(MPI_Comm_size(impl_->comm, &impl_->world));
  if (impl_->world > 1) impl_->responder = std::thread([this] { impl_->respond_loop(); });
}

PeerStatus::~PeerStatus() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->cv.notify_all();
  if (impl_->responder.joinable()) impl_->responder.join();
  MPI_Comm_free(&impl_->comm);
}

void PeerStatus::begin(uint64_t seq, CommOp op, size_t count) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->in_flight = seq;
  impl_->op = op;
  impl_->count = count;
  impl_->started = Clock::now();
}

void PeerStatus::end(uint64_t seq) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->in_flight = 0;
  impl_->last_done = seq;
}

std::string PeerStatus::report(uint64_t seq, double answer_s) {
  Impl& m = *impl_;
  if (m.world == 1) return "";
  const int64_t query = int64_t(seq);
  std::vector<std::vector<int64_t>> answer(size_t(m.world), std::vector<int64_t>(kReplyWords, 0));
  std::vector<MPI_Request> recvs(size_t(m.world), MPI_REQUEST_NULL), sends(size_t(m.world), MPI_REQUEST_NULL);
  for (int r = 0; r < m.world; ++r) {
    if (r == m.rank) continue;
    if (MPI_Irecv(answer[size_t(r)].data(), kReplyWords, MPI_INT64_T, r, kReplyTag, m.comm, &recvs[size_t(r)]) != MPI_SUCCESS ||
        MPI_Isend(&query, 1, MPI_INT64_T, r, kQueryTag, m.comm, &sends[size_t(r)]) != MPI_SUCCESS)
      recvs[size_t(r)] = MPI_REQUEST_NULL;  // counted as no answer
  }
  std::vector<bool> answered(size_t(m.world), false);
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(answer_s));
  for (int pending = m.world - 1; pending > 0 && Clock::now() < deadline;) {
    pending = 0;
    for (int r = 0; r < m.world; ++r) {
      if (r == m.rank || answered[size_t(r)] || recvs[size_t(r)] == MPI_REQUEST_NULL) continue;
      int done = 0;
      if (MPI_Test(&recvs[size_t(r)], &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done) answered[size_t(r)] = true;
      else ++pending;
    }
    if (pending) std::this_thread::sleep_for(kPoll);
  }
  // Sort the ranks into what they were doing; the job is aborted next, so unfinished requests stay.
  std::vector<int> silent, same;
  std::map<std::string, std::vector<int>> elsewhere;  // description -> ranks
  for (int r = 0; r < m.world; ++r) {
    if (r == m.rank) continue;
    const std::vector<int64_t>& a = answer[size_t(r)];
    if (!answered[size_t(r)]) silent.push_back(r);
    else if (a[kInFlight] == query) same.push_back(r);
    else if (a[kInFlight] != 0)
      elsewhere["in " + call_name(a[kOp], a[kCount], a[kInFlight]) + " for " + std::to_string(a[kAgeMs] / 1000) +
                " s (call #" + std::to_string(seq) + " differs between ranks: ZT_COMM_DEBUG=1 names both calls)"]
          .push_back(r);
    else if (a[kLastDone] < query)
      elsewhere["not in a collective: its last completed call is #" + std::to_string(a[kLastDone]) +
                " (busy or hung outside the collectives)"]
          .push_back(r);
    else elsewhere["past call #" + std::to_string(seq) + " (last completed #" + std::to_string(a[kLastDone]) + ")"].push_back(r);
  }
  std::vector<std::string> parts;
  if (!silent.empty()) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", answer_s);
    parts.push_back(rank_list(silent) + " did not answer within " + b +
                    " s (stopped, e.g. by SIGSTOP, or hung with every thread blocked)");
  }
  for (const auto& [what, ranks] : elsewhere) parts.push_back(rank_list(ranks) + (ranks.size() == 1 ? " is " : " are ") + what);
  if (!same.empty())
    parts.push_back(rank_list(same) + (same.size() == 1 ? " is" : " are") + " waiting in the same call");
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : "; ") + p;
  return s;
}

}  // namespace zt
