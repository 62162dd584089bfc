// The emulated cluster's delay line: latency on the links between emulated nodes, which this kernel
// cannot add itself (no netem, fq or etf). scripts/cluster.sh runs one in each node's network
// namespace and adds an iptables NFQUEUE rule there that hands every packet the node receives on its
// link to this process; it lets each packet go a fixed time after the packet reached it, in arrival
// order, so the link's one-way latency grows by that time (the round trip by twice it). Packets are
// held in the kernel; only their ids come here (no payload is copied, GSO packets stay whole).
// Its own cost sets a floor of some tens of microseconds; cluster.sh measures the link with ping
// after starting it, and the rule has --queue-bypass, so a delay line that dies leaves the link up
// and undelayed rather than cut.
//
//   delay_line --queue N --delay-us D [--ready FILE]
//
// Built by scripts/cluster.sh (g++ ... -lnetfilter_queue -lnfnetlink); needs CAP_NET_ADMIN.
#include <arpa/inet.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <libnfnetlink/libnfnetlink.h>
#include <linux/netfilter.h>
#include <linux/netlink.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>

namespace {

volatile sig_atomic_t g_stop = 0;  // set by SIGTERM/SIGINT: let every held packet go, then exit

int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "delay_line: %s (%s)\n", what.c_str(), std::strerror(errno));
  std::exit(1);
}

// The packets held, oldest first: the id the kernel gave each and when it may leave. One fixed
// delay keeps due times in arrival order, so the front is always the next to go.
struct Held {
  uint32_t id;
  int64_t due_ns;
};

struct Line {
  std::deque<Held> held;
  int64_t delay_ns = 0;
  uint64_t passed = 0;
};

int on_packet(nfq_q_handle*, nfgenmsg*, nfq_data* nfa, void* data) {
  auto* line = static_cast<Line*>(data);
  const nfqnl_msg_packet_hdr* ph = nfq_get_msg_packet_hdr(nfa);
  if (ph) line->held.push_back({ntohl(ph->packet_id), now_ns() + line->delay_ns});
  return 0;
}

// Lets every held packet whose time has come go, with one batch verdict: the kernel accepts every
// queued id up to the newest due one, and all older ids are due too.
void release_due(nfq_q_handle* qh, Line& line, bool all) {
  const int64_t now = now_ns();
  uint32_t last = 0;
  bool any = false;
  while (!line.held.empty() && (all || line.held.front().due_ns <= now)) {
    last = line.held.front().id;
    line.held.pop_front();
    any = true;
    ++line.passed;
  }
  if (any && nfq_set_verdict_batch(qh, last, NF_ACCEPT) < 0) fail("the verdict for packet " + std::to_string(last) + " failed");
}

}  // namespace

int main(int argc, char** argv) {
  long queue = -1;
  double delay_us = -1;
  const char* ready = nullptr;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--queue" && i + 1 < argc) queue = std::strtol(argv[++i], nullptr, 10);
    else if (a == "--delay-us" && i + 1 < argc) delay_us = std::strtod(argv[++i], nullptr);
    else if (a == "--ready" && i + 1 < argc) ready = argv[++i];
    else {
      std::fprintf(stderr, "delay_line: unknown argument '%s' (usage: delay_line --queue N --delay-us D [--ready FILE])\n", argv[i]);
      return 2;
    }
  }
  if (queue < 0 || queue > 65535 || delay_us < 0 || delay_us > 10e6) {
    std::fprintf(stderr, "delay_line: needs --queue 0..65535 and --delay-us 0..10000000 (got %ld and %g)\n", queue, delay_us);
    return 2;
  }
  struct sigaction sa{};
  sa.sa_handler = [](int) { g_stop = 1; };
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  prctl(PR_SET_TIMERSLACK, 1000UL);  // wake within a microsecond of a packet's due time, not 50
  // Real-time priority: the emulated nodes' ranks share the machine's cores and poll while they wait,
  // and a delay line that waits its turn behind them holds packets for whole scheduler slices
  // (steps of 0.5-5.8 s where 0.5 was due, with 2 ms asked and four ranks on two cores).
  sched_param sp{};
  sp.sched_priority = 10;
  if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0)
    std::fprintf(stderr, "delay_line: no real-time priority (%s): the hold can stretch when the cores are busy\n",
                 std::strerror(errno));

  Line line;
  line.delay_ns = int64_t(delay_us * 1e3);
  nfq_handle* h = nfq_open();
  if (!h) fail("cannot open the netfilter queue interface");
  nfq_q_handle* qh = nfq_create_queue(h, uint16_t(queue), &on_packet, &line);
  if (!qh) fail("cannot bind queue " + std::to_string(queue) + " (another process holds it, or no CAP_NET_ADMIN)");
  if (nfq_set_mode(qh, NFQNL_COPY_META, 0) < 0) fail("cannot ask for metadata only");
  if (nfq_set_queue_maxlen(qh, 1 << 20) < 0) fail("cannot set the queue's length");
  nfq_set_queue_flags(qh, NFQA_CFG_F_GSO, NFQA_CFG_F_GSO);  // an older kernel segments instead: slower, still right
  nfnl_rcvbufsiz(nfq_nfnlh(h), 64u << 20);
  const int fd = nfq_fd(h);
  int one = 1;
  setsockopt(fd, SOL_NETLINK, NETLINK_NO_ENOBUFS, &one, sizeof one);
  if (ready) {
    FILE* f = std::fopen(ready, "w");
    if (!f) fail(std::string("cannot write ") + ready);
    std::fprintf(f, "%ld %g\n", queue, delay_us);
    std::fclose(f);
  }

  alignas(8) static char buf[1 << 16];
  while (!g_stop) {
    timespec wait{};
    const timespec* timeout = nullptr;  // nothing held: sleep until a packet comes
    if (!line.held.empty()) {
      const int64_t left = std::max<int64_t>(0, line.held.front().due_ns - now_ns());
      wait.tv_sec = left / 1000000000;
      wait.tv_nsec = left % 1000000000;
      timeout = &wait;
    }
    pollfd p{fd, POLLIN, 0};
    const int r = ppoll(&p, 1, timeout, nullptr);
    if (r < 0 && errno != EINTR) fail("waiting for packets failed");
    if (r > 0) {
      for (;;) {  // everything the socket has now, then the verdicts
        const ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n < 0) {
          if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
          if (errno == ENOBUFS) continue;  // the kernel dropped messages it could not hand over
          fail("reading the queue failed");
        }
        nfq_handle_packet(h, buf, int(n));
      }
    }
    release_due(qh, line, false);
  }
  release_due(qh, line, true);
  nfq_destroy_queue(qh);
  nfq_close(h);
  std::fprintf(stderr, "delay_line: queue %ld: %llu packets held %g us each\n", queue,
               static_cast<unsigned long long>(line.passed), delay_us);
  return 0;
}
