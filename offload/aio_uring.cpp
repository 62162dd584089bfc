// AioEngine on io_uring: one I/O thread owns the ring, cuts each request into block_size pieces
// over intra_op_parallelism ranges, keeps at most queue_depth in flight and records failures.
#include "base/uring_check.h"
#include "offload/aio_uring.h"

#include <liburing.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>


namespace zt::offload {

struct AioRequest {
  IoOp op = IoOp::Read;
  int fd = -1;
  std::string path;
  char* buf = nullptr;
  size_t bytes = 0;
  off_t offset = 0;
  // Ranges [cursor, end) still to issue, one per intra-op part (offsets relative to the request).
  std::vector<size_t> cursor, end;
  size_t next_part = 0;
  int in_flight = 0;
  bool done = false;
  std::string error;  // empty = success
  int err = 0;        // its errno (0: short transfer)
};

namespace {

struct Piece {
  AioRequest* req;
  size_t rel;  // offset relative to the request start
  size_t len;
};

bool has_unissued(const AioRequest& r) {
  if (!r.error.empty()) return false;  // after a failure nothing more is issued
  for (size_t i = 0; i < r.cursor.size(); ++i)
    if (r.cursor[i] < r.end[i]) return true;
  return false;
}

const char* op_name(IoOp op) { return op == IoOp::Read ? "read" : "write"; }

std::string describe(const AioRequest& r, size_t rel, size_t len) {
  return std::string(op_name(r.op)) + " of " + std::to_string(len) + " bytes at offset " +
         std::to_string(static_cast<long long>(r.offset) + static_cast<long long>(rel)) + " in " + r.path;
}

}  // namespace

struct AioEngine::Ring {
  io_uring ring{};
};

void validate_aio_config(const AioConfig& c) {
  if (c.block_size == 0 || c.block_size % kDirectIoAlignment != 0)
    throw std::invalid_argument("aio.block_size = " + std::to_string(c.block_size) +
                                ": must be a positive multiple of " + std::to_string(kDirectIoAlignment));
  if (c.queue_depth < 1 || c.queue_depth > 4096)
    throw std::invalid_argument("aio.queue_depth = " + std::to_string(c.queue_depth) + ": must be in 1..4096");
  if (c.intra_op_parallelism < 1 || c.intra_op_parallelism > 1024)
    throw std::invalid_argument("aio.intra_op_parallelism = " + std::to_string(c.intra_op_parallelism) +
                                ": must be in 1..1024");
}

AioEngine::AioEngine(const AioConfig& config) : config_(config), ring_(std::make_unique<Ring>()) {
  validate_aio_config(config_);
  ZT_URING_CHECK(io_uring_queue_init(static_cast<unsigned>(config_.queue_depth), &ring_->ring, 0),
                 "io_uring is unavailable (kernel too old, or disabled by sysctl kernel.io_uring_disabled)");
  thread_ = std::thread([this] { io_loop(); });
}

AioEngine::~AioEngine() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_work_.notify_all();
  thread_.join();
  io_uring_queue_exit(&ring_->ring);
}

AioHandle AioEngine::submit(IoOp op, int fd, const std::string& path, void* buf, size_t bytes, off_t offset,
                            bool direct) {
  const auto a = kDirectIoAlignment;
  if (direct && (reinterpret_cast<uintptr_t>(buf) % a || bytes % a || static_cast<size_t>(offset) % a))
    throw std::invalid_argument(std::string(op_name(op)) + " on " + path + ": buffer, offset and size must be " +
                                std::to_string(a) + "-byte aligned for direct I/O");
  auto r = std::make_shared<AioRequest>();
  r->op = op;
  r->fd = fd;
  r->path = path;
  r->buf = static_cast<char*>(buf);
  r->bytes = bytes;
  r->offset = offset;
  // Split into intra_op_parallelism ranges on alignment boundaries (the last one takes a buffered
  // request's unaligned tail).
  const size_t parts = static_cast<size_t>(config_.intra_op_parallelism);
  const size_t units = bytes / a;
  for (size_t i = 0; i < parts; ++i) {
    const size_t b = units * i / parts * a, e = i + 1 == parts ? bytes : units * (i + 1) / parts * a;
    if (e > b) {
      r->cursor.push_back(b);
      r->end.push_back(e);
    }
  }
  if (bytes == 0) r->done = true;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (!r->done) queue_.push_back(r);
  }
  cv_work_.notify_all();
  return r;
}

bool AioEngine::done(const AioHandle& h) {
  std::lock_guard<std::mutex> lk(mu_);
  return h->done;
}

void AioEngine::wait(const AioHandle& h) {
  if (!h) return;
  std::unique_lock<std::mutex> lk(mu_);
  cv_done_.wait(lk, [&] { return h->done; });
  if (!h->error.empty()) throw AioError(h->error, h->err);
}

void AioEngine::io_loop() {
  io_uring* ring = &ring_->ring;
  std::vector<AioHandle> active;  // requests being issued or with pieces in flight
  int in_flight = 0;
  int write_pieces_done = 0, read_pieces_done = 0;
  // Marks requests with nothing left to issue and nothing in flight as done and wakes waiters.
  auto finish_ready = [&] {
    {
      std::lock_guard<std::mutex> lk(mu_);
      for (auto it = active.begin(); it != active.end();) {
        if ((*it)->in_flight == 0 && !has_unissued(**it)) {
          (*it)->done = true;
          it = active.erase(it);
        } else {
          ++it;
        }
      }
    }
    cv_done_.notify_all();
  };
  for (;;) {
    // 1. Take new requests (all of them, or one at a time without overlap_events).
    {
      std::unique_lock<std::mutex> lk(mu_);
      if (active.empty() && in_flight == 0)
        cv_work_.wait(lk, [&] { return stop_ || !queue_.empty(); });
      if (stop_ && queue_.empty() && active.empty() && in_flight == 0) return;
      while (!queue_.empty() && (config_.overlap_events || active.empty())) {
        active.push_back(queue_.front());
        queue_.pop_front();
      }
    }
    // 2. Issue pieces round-robin over requests and their parts while the queue has room.
    int prepared = 0;
    bool progress = true;
    while (in_flight < config_.queue_depth && progress) {
      progress = false;
      for (auto& r : active) {
        if (in_flight >= config_.queue_depth) break;
        if (!has_unissued(*r)) continue;
        size_t part = r->next_part % r->cursor.size();
        while (r->cursor[part] >= r->end[part]) part = (part + 1) % r->cursor.size();
        r->next_part = part + 1;
        const size_t rel = r->cursor[part];
        const size_t len = std::min(config_.block_size, r->end[part] - rel);
        r->cursor[part] += len;
        io_uring_sqe* sqe = io_uring_get_sqe(ring);
        if (!sqe) {  // ring full of unsubmitted entries: submit, then retry
          ZT_URING_CHECK(io_uring_submit(ring), "io_uring_submit failed");
          prepared = 0;
          sqe = io_uring_get_sqe(ring);
        }
        if (r->op == IoOp::Read) io_uring_prep_read(sqe, r->fd, r->buf + rel, static_cast<unsigned>(len), r->offset + rel);
        else io_uring_prep_write(sqe, r->fd, r->buf + rel, static_cast<unsigned>(len), r->offset + rel);
        io_uring_sqe_set_data(sqe, new Piece{r.get(), rel, len});
        ++r->in_flight;
        ++in_flight;
        ++prepared;
        progress = true;
        if (config_.single_submit) {
          ZT_URING_CHECK(io_uring_submit(ring), "io_uring_submit failed");
          prepared = 0;
        }
      }
    }
    if (prepared > 0) ZT_URING_CHECK(io_uring_submit(ring), "io_uring_submit failed");
    if (in_flight == 0) {
      finish_ready();
      continue;
    }
    // 3. Reap at least one completion, then everything already there.
    io_uring_cqe* cqe = nullptr;
    int rc;
    do {
      rc = io_uring_wait_cqe(ring, &cqe);
    } while (rc == -EINTR);
    ZT_URING_CHECK(rc, "io_uring_wait_cqe failed");
    while (cqe) {
      auto* piece = static_cast<Piece*>(io_uring_cqe_get_data(cqe));
      int res = cqe->res;
      io_uring_cqe_seen(ring, cqe);
      --in_flight;
      AioRequest& r = *piece->req;
      if (r.op == IoOp::Write && ++write_pieces_done == config_.fault_on_write_piece) res = -config_.fault_errno;
      if (r.op == IoOp::Read && ++read_pieces_done == config_.fault_on_read_piece) res = -config_.fault_errno;
      if (res < 0 && r.error.empty()) {
        r.err = -res;
        r.error = describe(r, piece->rel, piece->len) + " failed: " + std::strerror(-res) + " (errno " +
                  std::to_string(-res) + ")";
        if (-res == ENOSPC) r.error += ". Fix: free space at the nvme_path or point it at a larger file system";
        if (-res == EINVAL) r.error += ". Hint: the file system may not support O_DIRECT at this alignment";
      } else if (res >= 0 && static_cast<size_t>(res) < piece->len && r.error.empty()) {
        if (res == 0) {
          r.error = describe(r, piece->rel, piece->len) + " failed: short " + op_name(r.op) +
                    " (0 bytes transferred; end of file or device full)";
        } else {  // partial transfer: issue the rest as a new piece
          io_uring_sqe* sqe = io_uring_get_sqe(ring);
          const size_t rel = piece->rel + static_cast<size_t>(res), len = piece->len - static_cast<size_t>(res);
          if (r.op == IoOp::Read) io_uring_prep_read(sqe, r.fd, r.buf + rel, static_cast<unsigned>(len), r.offset + rel);
          else io_uring_prep_write(sqe, r.fd, r.buf + rel, static_cast<unsigned>(len), r.offset + rel);
          io_uring_sqe_set_data(sqe, new Piece{&r, rel, len});
          ZT_URING_CHECK(io_uring_submit(ring), "io_uring_submit failed");
          ++r.in_flight;
          ++in_flight;
        }
      }
      --r.in_flight;
      delete piece;
      cqe = nullptr;
      if (io_uring_peek_cqe(ring, &cqe) != 0) cqe = nullptr;
    }
    finish_ready();
  }
}

}  // namespace zt::offload
