// PeerStatus: the progress records per channel, the hosts, the responder thread on a private
// communicator, and the query with a deadline that turns the answers into sentences naming the
// ranks (or the whole host) that did not arrive.
#include "collectives/peer_status.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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
constexpr int kHostChars = 64;  // host names are compared and printed up to this length

// A query: the channel and the call asked about. A reply: the call in flight on that channel (0 =
// none), its op and count, how long it has run, the last completed.
enum { kQChannel, kQSeq, kQueryWords };
enum { kInFlight, kOp, kCount, kAgeMs, kLastDone, kReplyWords };

std::string call_name(int64_t op, int64_t count, int64_t seq) {
  return std::string(comm_op_name(CommOp(op))) + "(" + std::to_string(count) + ") #" + std::to_string(seq);
}

struct Record {
  uint64_t in_flight = 0, last_done = 0;
  CommOp op = CommOp::Barrier;
  size_t count = 0;
  Clock::time_point started;
};

}  // namespace

struct PeerStatus::Impl {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, world = 1;
  std::vector<std::string> hosts;  // per world rank

  std::mutex mu;  // guards records and stop
  std::map<uint64_t, Record> records;
  bool stop = false;
  std::condition_variable cv;
  std::thread responder;

  void reply_words(uint64_t channel, int64_t* out) {
    std::lock_guard<std::mutex> lock(mu);
    const Record r = records.count(channel) ? records[channel] : Record{};
    out[kInFlight] = int64_t(r.in_flight);
    out[kOp] = int64_t(r.op);
    out[kCount] = int64_t(r.count);
    out[kAgeMs] = r.in_flight ? std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - r.started).count() : 0;
    out[kLastDone] = int64_t(r.last_done);
  }

  void respond_loop() {
    int64_t query[kQueryWords] = {};
    MPI_Request req;
    ZT_MPI_CHECK(MPI_Irecv(query, kQueryWords, MPI_INT64_T, MPI_ANY_SOURCE, kQueryTag, comm, &req), "peer status: listen");
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
        reply_words(uint64_t(query[kQChannel]), replies.back().data());
        sends.emplace_back();
        ZT_MPI_CHECK(MPI_Isend(replies.back().data(), kReplyWords, MPI_INT64_T, st.MPI_SOURCE, kReplyTag, comm,
                               &sends.back()),
                     "peer status: answer");
        ZT_MPI_CHECK(MPI_Irecv(query, kQueryWords, MPI_INT64_T, MPI_ANY_SOURCE, kQueryTag, comm, &req),
                     "peer status: listen");
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
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  char mine[kHostChars] = {};
  std::snprintf(mine, sizeof mine, "%s", name);
  std::vector<char> all(size_t(impl_->world) * kHostChars);
  ZT_MPI_CHECK(MPI_Allgather(mine, kHostChars, MPI_CHAR, all.data(), kHostChars, MPI_CHAR, impl_->comm),
               "peer status: host names");
  for (int r = 0; r < impl_->world; ++r)
    impl_->hosts.emplace_back(all.data() + size_t(r) * kHostChars, strnlen(all.data() + size_t(r) * kHostChars, kHostChars));
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

uint64_t PeerStatus::child_channel(uint64_t parent, uint64_t split_index, int color) {
  uint64_t h = 1469598103934665603ull;
  for (uint64_t v : {parent, split_index, uint64_t(uint32_t(color))}) h = (h ^ v) * 1099511628211ull;
  return h ? h : 1;  // 0 is the world's
}

int PeerStatus::world_rank() const { return impl_->rank; }
int PeerStatus::world_size() const { return impl_->world; }
const std::string& PeerStatus::host(int world_rank) const { return impl_->hosts[size_t(world_rank)]; }

void PeerStatus::begin(uint64_t channel, uint64_t seq, CommOp op, size_t count) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Record& r = impl_->records[channel];
  r.in_flight = seq;
  r.op = op;
  r.count = count;
  r.started = Clock::now();
}

void PeerStatus::end(uint64_t channel, uint64_t seq) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Record& r = impl_->records[channel];
  r.in_flight = 0;
  r.last_done = seq;
}

PeerStatus::Report PeerStatus::report(uint64_t channel, uint64_t seq, const std::vector<int>& members, double timeout_s,
                                      double answer_s) {
  Impl& m = *impl_;
  Report out;
  const size_t G = members.size();
  if (G <= 1) return out;
  const int64_t query[kQueryWords] = {int64_t(channel), int64_t(seq)};
  std::vector<std::vector<int64_t>> answer(G, std::vector<int64_t>(kReplyWords, 0));
  std::vector<MPI_Request> recvs(G, MPI_REQUEST_NULL), sends(G, MPI_REQUEST_NULL);
  for (size_t i = 0; i < G; ++i) {
    const int r = members[i];
    if (r == m.rank) continue;
    if (MPI_Irecv(answer[i].data(), kReplyWords, MPI_INT64_T, r, kReplyTag, m.comm, &recvs[i]) != MPI_SUCCESS ||
        MPI_Isend(query, kQueryWords, MPI_INT64_T, r, kQueryTag, m.comm, &sends[i]) != MPI_SUCCESS)
      recvs[i] = MPI_REQUEST_NULL;  // counted as no answer
  }
  std::vector<bool> answered(G, false);
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(answer_s));
  for (size_t pending = G - 1; pending > 0 && Clock::now() < deadline;) {
    pending = 0;
    for (size_t i = 0; i < G; ++i) {
      if (members[i] == m.rank || answered[i] || recvs[i] == MPI_REQUEST_NULL) continue;
      int done = 0;
      if (MPI_Test(&recvs[i], &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done) answered[i] = true;
      else ++pending;
    }
    if (pending) std::this_thread::sleep_for(kPoll);
  }
  // Sort the members into what they were doing; the job ends next, so unfinished requests stay.
  std::map<std::string, std::vector<int>> silent_by_host, members_by_host;
  std::vector<int> same;
  std::map<std::string, std::vector<int>> elsewhere;  // description -> ranks
  for (size_t i = 0; i < G; ++i) {
    const int r = members[i];
    members_by_host[m.hosts[size_t(r)]].push_back(r);
    if (r == m.rank) continue;
    const std::vector<int64_t>& a = answer[i];
    if (!answered[i]) {
      silent_by_host[m.hosts[size_t(r)]].push_back(r);
      continue;
    }
    // A lower member in a call on this channel, near its own timeout, reports the same hang.
    if (r < m.rank && a[kInFlight] != 0 && double(a[kAgeMs]) / 1000.0 >= timeout_s - 5.0) out.defer = true;
    if (a[kInFlight] == int64_t(seq)) same.push_back(r);
    else if (a[kInFlight] > int64_t(seq))
      elsewhere["past it, in " + call_name(a[kOp], a[kCount], a[kInFlight]) + " for " + std::to_string(a[kAgeMs] / 1000) +
                " s"]
          .push_back(r);
    else if (a[kInFlight] != 0)
      elsewhere["in " + call_name(a[kOp], a[kCount], a[kInFlight]) + " for " + std::to_string(a[kAgeMs] / 1000) +
                " s (call #" + std::to_string(seq) + " differs between ranks: ZT_COMM_DEBUG=1 names both calls)"]
          .push_back(r);
    else if (a[kLastDone] < int64_t(seq))
      elsewhere["not in a collective: its last completed call is #" + std::to_string(a[kLastDone]) +
                " (busy or hung outside the collectives)"]
          .push_back(r);
    else elsewhere["past call #" + std::to_string(seq) + " (last completed #" + std::to_string(a[kLastDone]) + ")"].push_back(r);
  }
  char secs[32];
  std::snprintf(secs, sizeof secs, "%g", answer_s);
  std::vector<std::string> parts;
  std::vector<int> silent_ranks;
  const std::string& my_host = m.hosts[size_t(m.rank)];
  for (const auto& [host, ranks] : silent_by_host) {
    // Every member on another host silent: the host is gone or cut off (or all of it stopped).
    if (host != my_host && ranks.size() == members_by_host[host].size()) {
      out.host_lost = true;
      parts.push_back("host " + host + " (" + rank_list(ranks) + ") did not answer within " + secs +
                      " s: that host, or the link to it, is down (or every rank of it in this group is stopped)");
    } else {
      silent_ranks.insert(silent_ranks.end(), ranks.begin(), ranks.end());
    }
  }
  std::sort(silent_ranks.begin(), silent_ranks.end());
  if (!silent_ranks.empty())
    parts.push_back(rank_list(silent_ranks) + " did not answer within " + secs +
                    " s (stopped, e.g. by SIGSTOP, or hung with every thread blocked)");
  for (const auto& [what, ranks] : elsewhere) parts.push_back(rank_list(ranks) + (ranks.size() == 1 ? " is " : " are ") + what);
  if (!same.empty()) parts.push_back(rank_list(same) + (same.size() == 1 ? " is" : " are") + " waiting in the same call");
  for (const auto& p : parts) out.text += (out.text.empty() ? "" : "; ") + p;
  return out;
}

LauncherLinkCheck launcher_link_check() {
  const char* names[3] = {"OMPI_MCA_oob_tcp_keepalive_time", "OMPI_MCA_oob_tcp_keepalive_intvl",
                          "OMPI_MCA_oob_tcp_keepalive_probes"};
  double v[3] = {300, 20, 9};  // Open MPI's defaults
  bool any = false;
  for (int i = 0; i < 3; ++i) {
    const char* e = std::getenv(names[i]);
    if (!e || !*e) continue;
    char* end = nullptr;
    const double x = std::strtod(e, &end);
    if (end && !*end && x >= 0) v[i] = x, any = true;
  }
  LauncherLinkCheck out;
  if (!any || v[0] <= 0) return out;  // unset (minutes at the defaults) or switched off
  out.seconds = v[0] + v[1] * v[2];
  char text[160];
  std::snprintf(text, sizeof text, "oob_tcp_keepalive_time %g + intvl %g x probes %g", v[0], v[1], v[2]);
  out.source = text;
  return out;
}

std::string launcher_link_check_hint(double timeout_s) {
  // Idle 5 s, then 3 missed probes spaced so the check lands a few seconds after the watchdog's report.
  const int intvl = int(std::ceil((timeout_s + 5.0) / 3.0));
  return "--mca oob_tcp_keepalive_time 5 --mca oob_tcp_keepalive_intvl " + std::to_string(intvl) +
         " --mca oob_tcp_keepalive_probes 3";
}

}  // namespace zt
