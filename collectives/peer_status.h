// PeerStatus: each rank's collective progress on each of its communicators (the call in flight, the
// last one completed), every rank's host, and a side channel on which a rank whose collective timed
// out asks the group's other members, to name who did not arrive and whether a whole host is gone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collectives/communicator.h"

namespace zt {

// MPI only. One per world communicator, shared by the groups split from it. Owns a duplicate of
// COMM_WORLD used for nothing else and a responder thread that answers status queries with
// non-blocking calls (polled every few milliseconds, so it costs no core). A rank that is stopped
// (SIGSTOP), dead, cut off, or blocked in every thread gives no answer; a rank that is alive but not
// in the collective answers with its last completed call.
class PeerStatus {
 public:
  // Collective over COMM_WORLD: every rank constructs it at the same point. Learns every rank's host
  // name (MPI_Get_processor_name).
  PeerStatus();
  ~PeerStatus();  // stops the responder, frees the communicator
  PeerStatus(const PeerStatus&) = delete;
  PeerStatus& operator=(const PeerStatus&) = delete;

  // A communicator's channel: the world's is 0; a group's is derived from its parent's channel, the
  // parent's count of splits so far and the color, which every member of the group shares.
  static uint64_t child_channel(uint64_t parent, uint64_t split_index, int color);

  // The communication thread records each call as it starts and completes.
  void begin(uint64_t channel, uint64_t seq, CommOp op, size_t count);
  void end(uint64_t channel, uint64_t seq);

  int world_rank() const;
  int world_size() const;
  const std::string& host(int world_rank) const;

  struct Report {
    std::string text;        // one sentence per kind of member that has not arrived, "; " between
    bool host_lost = false;  // every member on some other host was silent: that host or its link is down
    bool defer = false;      // a lower member is in the call and near its own timeout: it reports the hang
  };
  // Asks the group's other members (world ranks, in group order) about call `seq` on `channel` and
  // waits for the answers at most `answer_s` seconds. Ranks are named by their world rank; a silent
  // host by its name, e.g. "host n2 (ranks 2, 3) did not answer within 2 s: that host, or the link to
  // it, is down (or every rank of it in this group is stopped)"; then "rank 1 is waiting in the same call".
  Report report(uint64_t channel, uint64_t seq, const std::vector<int>& members, double timeout_s,
                double answer_s = 2.0);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// How long the launcher (Open MPI's daemons) takes to notice a link that went silent, from the
// oob_tcp_keepalive_* parameters in this process's environment (mpirun --mca passes them down as
// OMPI_MCA_*); seconds 0 when none is set, where Open MPI's defaults (300 + 20 x 9 s) would apply.
struct LauncherLinkCheck {
  double seconds = 0;
  std::string source;  // "oob_tcp_keepalive_time 5 + intvl 5 x probes 3"
};
LauncherLinkCheck launcher_link_check();
// The mpirun options that make the launcher's check end a job within timeout_s + 30 s of a lost node.
std::string launcher_link_check_hint(double timeout_s);

}  // namespace zt
