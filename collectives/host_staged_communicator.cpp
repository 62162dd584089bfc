// HostStagedCommunicator: the staging pool, the handle that copies the result back, and the
// mapping of each collective onto one host buffer (every call runs in place on the host).
#include "collectives/host_staged_communicator.h"

#include <algorithm>
#include <exception>
#include <mutex>
#include <utility>
#include <vector>

#include "collectives/comm_common.h"

namespace zt {

// Pinned buffers kept for reuse. Capacities are powers of two (at least 64 KiB), so that buffers
// of the same order of size are shared between calls; take() hands out the smallest one that fits.
class HostStagedCommunicator::Pool {
 public:
  explicit Pool(offload::PinnedAllocatorOptions pin) : alloc_(std::move(pin)) {}

  offload::PinnedBuffer take(size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    size_t best = free_.size();
    for (size_t i = 0; i < free_.size(); ++i)
      if (free_[i].size() >= bytes && (best == free_.size() || free_[i].size() < free_[best].size())) best = i;
    if (best != free_.size()) {
      offload::PinnedBuffer b = std::move(free_[best]);
      free_.erase(free_.begin() + std::ptrdiff_t(best));
      return b;
    }
    size_t cap = size_t(64) << 10;
    while (cap < bytes) cap <<= 1;
    held_ += cap;
    return alloc_.allocate(cap);
  }
  void give(offload::PinnedBuffer b) {
    if (!b.data()) return;
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(std::move(b));
  }
  size_t held() const {
    std::lock_guard<std::mutex> lock(mu_);
    return held_;
  }

 private:
  mutable std::mutex mu_;
  offload::PinnedAllocator alloc_;
  std::vector<offload::PinnedBuffer> free_;
  size_t held_ = 0;
};

namespace {

// A run of bytes between backend memory (`dev`) and offset `host` of the staging buffer.
struct Piece {
  void* dev;
  size_t host, bytes;
};

// The handle of one staged collective: owns the host buffer until the inner collective is done,
// then (in wait/done) copies the `back` pieces of it to backend memory.
class StagedHandle final : public CommHandle {
 public:
  StagedHandle(CommHandlePtr inner, Backend& be, std::shared_ptr<HostStagedCommunicator::Pool> pool,
               offload::PinnedBuffer buf, std::vector<Piece> back)
      : inner_(std::move(inner)), be_(be), pool_(std::move(pool)), buf_(std::move(buf)), back_(std::move(back)) {}
  ~StagedHandle() override {
    if (finished_) return;
    try {
      inner_->wait();  // the inner collective may still be writing the host buffer
    } catch (...) {  // its failure was the caller's to see through wait(); the buffer is all we own
    }
    pool_->give(std::move(buf_));
  }
  void wait() override {
    finish();
    if (error_) std::rethrow_exception(error_);
  }
  bool done() override {
    if (!finished_ && !inner_->done()) return false;
    finish();
    return true;
  }

 private:
  void finish() {
    if (finished_) return;
    try {
      inner_->wait();
      Backend::CopyTicket last = 0;
      bool any = false;
      for (const Piece& p : back_)
        if (p.bytes) {
          last = be_.copy_to_device_async(p.dev, buf_.as<char>() + p.host, p.bytes);
          any = true;
        }
      if (any) be_.wait_copy(last);  // the last copy done implies every earlier one in its direction
    } catch (...) {
      error_ = std::current_exception();
    }
    finished_ = true;
    pool_->give(std::move(buf_));
  }

  CommHandlePtr inner_;
  Backend& be_;
  std::shared_ptr<HostStagedCommunicator::Pool> pool_;
  offload::PinnedBuffer buf_;
  std::vector<Piece> back_;
  bool finished_ = false;
  std::exception_ptr error_;
};

}  // namespace

HostStagedCommunicator::HostStagedCommunicator(std::unique_ptr<Communicator> inner, Backend& backend,
                                               offload::PinnedAllocatorOptions pin)
    : inner_(std::move(inner)), backend_(backend), pool_(std::make_shared<Pool>(std::move(pin))) {}

HostStagedCommunicator::~HostStagedCommunicator() = default;

size_t HostStagedCommunicator::staging_bytes() const { return pool_->held(); }

namespace {

// A host buffer of `bytes` with the `in` pieces of backend memory copied into it (waited for: the
// inner collective reads it next).
offload::PinnedBuffer stage_in(HostStagedCommunicator::Pool& pool, Backend& be, size_t bytes,
                               const std::vector<Piece>& in) {
  offload::PinnedBuffer buf = pool.take(bytes);
  Backend::CopyTicket last = 0;
  bool any = false;
  for (const Piece& p : in)
    if (p.bytes) {
      last = be.copy_to_host_async(buf.as<char>() + p.host, p.dev, p.bytes);
      any = true;
    }
  if (any) be.wait_copy(last);
  return buf;
}

// Starts the inner collective on `buf` and wraps it; a call the inner communicator refuses returns
// the buffer to the pool before the error propagates.
template <class Start>
CommHandlePtr launch(const std::shared_ptr<HostStagedCommunicator::Pool>& pool, Backend& be,
                     offload::PinnedBuffer buf, std::vector<Piece> back, Start start) {
  CommHandlePtr inner;
  try {
    inner = start(buf.as<char>());
  } catch (...) {
    pool->give(std::move(buf));
    throw;
  }
  return std::make_shared<StagedHandle>(std::move(inner), be, pool, std::move(buf), std::move(back));
}

}  // namespace

CommHandlePtr HostStagedCommunicator::all_reduce_async(const void* send, void* recv, size_t count, DType t,
                                                       ReduceOp op) {
  check_reduction(CommOp::AllReduce, t, op);
  if (count == 0) return inner_->all_reduce_async(send, recv, 0, t, op);
  const size_t bytes = count * dtype_size(t);
  return launch(pool_, backend_, stage_in(*pool_, backend_, bytes, {{const_cast<void*>(send), 0, bytes}}),
                {{recv, 0, bytes}}, [&](char* h) { return inner_->all_reduce_async(h, h, count, t, op); });
}

CommHandlePtr HostStagedCommunicator::reduce_scatter_async(const void* send, void* recv, size_t count, DType t,
                                                           ReduceOp op) {
  check_even_split(CommOp::ReduceScatter, count, world_size());
  check_reduction(CommOp::ReduceScatter, t, op);
  if (count == 0) return inner_->reduce_scatter_async(send, recv, 0, t, op);
  const size_t es = dtype_size(t), bytes = count * es;
  const size_t shard_bytes = count / size_t(world_size()) * es, mine = size_t(rank()) * shard_bytes;
  return launch(pool_, backend_, stage_in(*pool_, backend_, bytes, {{const_cast<void*>(send), 0, bytes}}),
                {{recv, mine, shard_bytes}},
                [&](char* h) { return inner_->reduce_scatter_async(h, h + mine, count, t, op); });
}

CommHandlePtr HostStagedCommunicator::all_gather_async(const void* send, void* recv, size_t count, DType t) {
  check_even_split(CommOp::AllGather, count, world_size());
  if (count == 0) return inner_->all_gather_async(send, recv, 0, t);
  const size_t es = dtype_size(t), bytes = count * es;
  const size_t shard_bytes = count / size_t(world_size()) * es, mine = size_t(rank()) * shard_bytes;
  return launch(pool_, backend_, stage_in(*pool_, backend_, bytes, {{const_cast<void*>(send), mine, shard_bytes}}),
                {{recv, 0, bytes}}, [&](char* h) { return inner_->all_gather_async(h + mine, h, count, t); });
}

CommHandlePtr HostStagedCommunicator::broadcast_async(void* buf_dev, size_t count, DType t, int root) {
  check_root(root, world_size());
  if (count == 0) return inner_->broadcast_async(buf_dev, 0, t, root);
  const size_t bytes = count * dtype_size(t);
  const bool is_root = rank() == root;
  return launch(pool_, backend_, stage_in(*pool_, backend_, bytes, {{buf_dev, 0, is_root ? bytes : 0}}),
                {{buf_dev, 0, is_root ? 0 : bytes}}, [&](char* h) { return inner_->broadcast_async(h, count, t, root); });
}

// Segments: packed back to back in one host buffer (in list order), the inner communicator's segment
// op on host segments of the same counts and owners, and only the segments the op changes copied
// back (reduce-scatter: the ones this rank owns; all-gather: the others; all-reduce: all).
CommHandlePtr HostStagedCommunicator::segments_async(CommOp op, const std::vector<Segment>& segments, DType t,
                                                     ReduceOp rop) {
  if (op != CommOp::AllGather) check_reduction(op, t, rop);
  const size_t total = check_segments(op, segments, world_size());
  const size_t es = dtype_size(t);
  std::vector<Piece> in, back;
  size_t off = 0;
  for (const Segment& sg : segments) {
    const Piece p{sg.data, off, sg.count * es};
    const bool mine = sg.owner == rank();
    if (op != CommOp::AllGather || mine) in.push_back(p);
    if (op == CommOp::AllReduce || (op == CommOp::ReduceScatter) == mine) back.push_back(p);
    off += p.bytes;
  }
  return launch(pool_, backend_, stage_in(*pool_, backend_, std::max<size_t>(total * es, 1), in), std::move(back),
                [&](char* h) {
                  std::vector<Segment> hs(segments.size());
                  size_t o = 0;
                  for (size_t i = 0; i < segments.size(); ++i) {
                    hs[i] = {h + o, segments[i].count, segments[i].owner};
                    o += segments[i].count * es;
                  }
                  if (op == CommOp::ReduceScatter) return inner_->reduce_scatter_segments_async(hs, t, rop);
                  if (op == CommOp::AllReduce) return inner_->all_reduce_segments_async(hs, t, rop);
                  return inner_->all_gather_segments_async(hs, t);
                });
}

CommHandlePtr HostStagedCommunicator::reduce_scatter_segments_async(const std::vector<Segment>& segments, DType t,
                                                                    ReduceOp op) {
  return segments_async(CommOp::ReduceScatter, segments, t, op);
}
CommHandlePtr HostStagedCommunicator::all_reduce_segments_async(const std::vector<Segment>& segments, DType t,
                                                                ReduceOp op) {
  return segments_async(CommOp::AllReduce, segments, t, op);
}
CommHandlePtr HostStagedCommunicator::all_gather_segments_async(const std::vector<Segment>& segments, DType t) {
  return segments_async(CommOp::AllGather, segments, t, ReduceOp::Sum);
}

}  // namespace zt
