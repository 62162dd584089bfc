// HostStagedCommunicator: the two staging slots and the collectives in flight on them, the handle
// that copies results back, and the cutting of each collective into inner calls that fit a slot
// (every inner call runs in place on the host).
#include "collectives/host_staged_communicator.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "collectives/comm_common.h"

namespace zt {

namespace {

// A run of bytes between backend memory (`dev`) and offset `host` of a staging slot.
struct Piece {
  void* dev;
  size_t host, bytes;
};

class StagedChunk;

}  // namespace

// Two slots, each holding one staged inner collective at a time, and those collectives in issue
// order so that a call finding both slots busy completes the oldest one.
class HostStagedCommunicator::Staging {
 public:
  Staging(offload::PinnedAllocatorOptions pin, uint64_t cap)
      : alloc_(std::move(pin)), cap_(cap), chunk_(size_t(comm_chunk_bytes(UINT64_MAX, cap))) {}

  size_t chunk_bytes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return chunk_;
  }
  size_t held() const {
    std::lock_guard<std::mutex> lock(mu_);
    return slots_[0].buf.size() + slots_[1].buf.size();
  }

  // Both slots sized to comm_chunk_bytes(L, cap) now, written once so that they are resident when
  // the ledger counts them; no slot grows afterwards.
  void reserve(uint64_t largest_call_bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    if (slots_[0].busy || slots_[1].busy)
      throw std::logic_error("HostStagedCommunicator::reserve_buffers: called while collectives are in flight");
    chunk_ = size_t(comm_chunk_bytes(largest_call_bytes, cap_));
    for (Slot& s : slots_) {
      if (s.buf.size() != chunk_) s.buf = alloc_.allocate(chunk_);
      std::memset(s.buf.data(), 0, chunk_);
    }
    reserved_ = true;
  }

  // A free slot of at least `bytes` (≤ chunk_bytes()). With both busy, the oldest staged collective
  // still in flight is completed first; a slot smaller than `bytes` grows (before a reservation).
  int acquire(size_t bytes);
  void release(int slot) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      slots_[slot].busy = false;
    }
    freed_.notify_all();
  }
  char* data(int slot) const { return slots_[slot].buf.as<char>(); }
  void track(const std::shared_ptr<StagedChunk>& c) {
    std::lock_guard<std::mutex> lock(mu_);
    in_flight_.push_back(c);
  }

 private:
  struct Slot {
    offload::PinnedBuffer buf;
    bool busy = false;
  };
  mutable std::mutex mu_;
  std::condition_variable freed_;
  offload::PinnedAllocator alloc_;
  const uint64_t cap_;
  size_t chunk_;
  bool reserved_ = false;
  Slot slots_[2];
  std::deque<std::weak_ptr<StagedChunk>> in_flight_;
};

namespace {

// One inner collective on a slot: owns the slot until the inner collective is done, then (in
// finish) copies the `back` pieces of it to backend memory.
class StagedChunk {
 public:
  StagedChunk(CommHandlePtr inner, Backend& be, std::shared_ptr<HostStagedCommunicator::Staging> staging, int slot,
              std::vector<Piece> back)
      : inner_(std::move(inner)), be_(be), staging_(std::move(staging)), slot_(slot), back_(std::move(back)) {}
  ~StagedChunk() {
    if (finished_) return;
    try {
      inner_->wait();  // the inner collective may still be writing the slot
    } catch (...) {  // its failure was the caller's to see through wait(); the slot is all we own
    }
    staging_->release(slot_);
  }
  StagedChunk(const StagedChunk&) = delete;
  StagedChunk& operator=(const StagedChunk&) = delete;

  bool done() { return finished_ || inner_->done(); }
  void finish() {
    if (finished_) return;
    try {
      inner_->wait();
      Backend::CopyTicket last = 0;
      bool any = false;
      for (const Piece& p : back_)
        if (p.bytes) {
          last = be_.copy_to_device_async(p.dev, staging_->data(slot_) + p.host, p.bytes);
          any = true;
        }
      if (any) be_.wait_copy(last);  // the last copy done implies every earlier one in its direction
    } catch (...) {
      error_ = std::current_exception();
    }
    finished_ = true;
    staging_->release(slot_);
  }
  const std::exception_ptr& error() const { return error_; }

 private:
  CommHandlePtr inner_;
  Backend& be_;
  std::shared_ptr<HostStagedCommunicator::Staging> staging_;
  int slot_;
  std::vector<Piece> back_;
  bool finished_ = false;
  std::exception_ptr error_;
};

// The handle of one call: its inner collectives, finished in order.
class StagedHandle final : public CommHandle {
 public:
  explicit StagedHandle(std::vector<std::shared_ptr<StagedChunk>> chunks) : chunks_(std::move(chunks)) {}
  void wait() override {
    for (auto& c : chunks_) c->finish();
    for (auto& c : chunks_)
      if (c->error()) std::rethrow_exception(c->error());
  }
  bool done() override {
    for (auto& c : chunks_)
      if (!c->done()) return false;
    for (auto& c : chunks_) c->finish();
    return true;
  }

 private:
  std::vector<std::shared_ptr<StagedChunk>> chunks_;
};

}  // namespace

int HostStagedCommunicator::Staging::acquire(size_t bytes) {
  for (;;) {
    std::shared_ptr<StagedChunk> oldest;
    {
      std::unique_lock<std::mutex> lock(mu_);
      for (int i = 0; i < 2; ++i) {
        Slot& s = slots_[i];
        if (s.busy) continue;
        if (s.buf.size() < bytes) {
          if (reserved_) throw std::logic_error("HostStagedCommunicator: a staged call larger than its reserved slot");
          s.buf = offload::PinnedBuffer();
          s.buf = alloc_.allocate(size_t(comm_chunk_bytes(bytes, cap_)));
        }
        s.busy = true;
        return i;
      }
      while (!in_flight_.empty() && !oldest) {
        oldest = in_flight_.front().lock();  // expired: its handle was dropped and it released its slot
        in_flight_.pop_front();
      }
      // Nothing left to complete: a dropped handle's collective is releasing its slot on another thread.
      if (!oldest) freed_.wait(lock, [&] { return !slots_[0].busy || !slots_[1].busy; });
    }
    if (oldest) oldest->finish();
  }
}

namespace {

// Stages one inner collective: `in` copied into a slot of `bytes` (waited for: the inner collective
// reads it next), then `start(slot)` issues it; a call the inner communicator refuses releases the
// slot before the error propagates.
template <class Start>
std::shared_ptr<StagedChunk> stage(const std::shared_ptr<HostStagedCommunicator::Staging>& staging, Backend& be,
                                   size_t bytes, const std::vector<Piece>& in, std::vector<Piece> back,
                                   Start start) {
  const int slot = staging->acquire(bytes);
  CommHandlePtr inner;
  try {
    char* h = staging->data(slot);
    Backend::CopyTicket last = 0;
    bool any = false;
    for (const Piece& p : in)
      if (p.bytes) {
        last = be.copy_to_host_async(h + p.host, p.dev, p.bytes);
        any = true;
      }
    if (any) be.wait_copy(last);
    inner = start(h);
  } catch (...) {
    staging->release(slot);
    throw;
  }
  auto c = std::make_shared<StagedChunk>(std::move(inner), be, staging, slot, std::move(back));
  staging->track(c);
  return c;
}

char* at(const void* p, size_t bytes) { return static_cast<char*>(const_cast<void*>(p)) + bytes; }

// Appends `p`, merged into the last piece when it continues it on both sides (a call that fits one
// slot then copies each buffer in one piece).
void add_piece(std::vector<Piece>& pieces, Piece p) {
  if (!pieces.empty()) {
    Piece& last = pieces.back();
    if (at(last.dev, last.bytes) == p.dev && last.host + last.bytes == p.host) {
      last.bytes += p.bytes;
      return;
    }
  }
  pieces.push_back(p);
}

// Elements per inner call when each carries `parts` runs of `es`-byte elements in `chunk` bytes.
size_t run_elements(size_t chunk, size_t parts, size_t es) {
  const size_t n = chunk / (parts * es);
  if (n == 0)
    throw std::invalid_argument("HostStagedCommunicator: a staging slot of " + std::to_string(chunk) +
                                " bytes cannot hold one element per rank (" + std::to_string(parts) +
                                " ranks); raise ZT_COMM_BUFFER_MB");
  return n;
}

}  // namespace

HostStagedCommunicator::HostStagedCommunicator(std::unique_ptr<Communicator> inner, Backend& backend,
                                               offload::PinnedAllocatorOptions pin, uint64_t staging_cap)
    : inner_(std::move(inner)), backend_(backend), staging_(std::make_shared<Staging>(pin, staging_cap)),
      cap_(staging_cap), pin_(std::move(pin)) {}

std::unique_ptr<Communicator> HostStagedCommunicator::split(int color, int key) {
  return std::make_unique<HostStagedCommunicator>(inner_->split(color, key), backend_, pin_, cap_);
}

HostStagedCommunicator::~HostStagedCommunicator() = default;

size_t HostStagedCommunicator::staging_bytes() const { return staging_->held(); }
size_t HostStagedCommunicator::staging_chunk_bytes() const { return staging_->chunk_bytes(); }

uint64_t HostStagedCommunicator::buffer_bytes_for(uint64_t largest_call_bytes) const {
  return inner_->buffer_bytes_for(largest_call_bytes) + 2 * comm_chunk_bytes(largest_call_bytes, cap_);
}
void HostStagedCommunicator::reserve_buffers(uint64_t largest_call_bytes) {
  inner_->reserve_buffers(largest_call_bytes);
  staging_->reserve(largest_call_bytes);
}

CommHandlePtr HostStagedCommunicator::all_reduce_async(const void* send, void* recv, size_t count, DType t,
                                                       ReduceOp op) {
  check_reduction(CommOp::AllReduce, t, op);
  if (count == 0) return inner_->all_reduce_async(send, recv, 0, t, op);
  const size_t es = dtype_size(t), per = run_elements(staging_->chunk_bytes(), 1, es);
  std::vector<std::shared_ptr<StagedChunk>> chunks;
  for (size_t a = 0; a < count; a += per) {
    const size_t n = std::min(per, count - a), bytes = n * es;
    chunks.push_back(stage(staging_, backend_, bytes, {{at(send, a * es), 0, bytes}}, {{at(recv, a * es), 0, bytes}},
                           [&](char* h) { return inner_->all_reduce_async(h, h, n, t, op); }));
  }
  return std::make_shared<StagedHandle>(std::move(chunks));
}

// Reduce-scatter and all-gather cut every rank's shard the same way: inner call k carries run k of
// each shard (elements [a, a + n) of every shard), the runs of all ranks back to back in the slot.
// `one(a, n, pieces)` stages one call, `pieces` saying where run k of each shard lies in `full`.
namespace {
template <typename StageOne>
CommHandlePtr by_shard_runs(size_t count, size_t w, size_t es, size_t chunk_bytes, const void* full, StageOne one) {
  const size_t shard = count / w, per = run_elements(chunk_bytes, w, es);
  std::vector<std::shared_ptr<StagedChunk>> chunks;
  for (size_t a = 0; a < shard; a += per) {
    const size_t n = std::min(per, shard - a), run = n * es;
    std::vector<Piece> pieces;
    for (size_t r = 0; r < w; ++r) add_piece(pieces, {at(full, (r * shard + a) * es), r * run, run});
    chunks.push_back(one(a, n, std::move(pieces)));
  }
  return std::make_shared<StagedHandle>(std::move(chunks));
}
}  // namespace

CommHandlePtr HostStagedCommunicator::reduce_scatter_async(const void* send, void* recv, size_t count, DType t,
                                                           ReduceOp op) {
  check_even_split(CommOp::ReduceScatter, count, world_size());
  check_reduction(CommOp::ReduceScatter, t, op);
  if (count == 0) return inner_->reduce_scatter_async(send, recv, 0, t, op);
  const size_t w = size_t(world_size()), me = size_t(rank()), es = dtype_size(t);
  return by_shard_runs(count, w, es, staging_->chunk_bytes(), send, [&](size_t a, size_t n, std::vector<Piece> in) {
    const size_t run = n * es;
    return stage(staging_, backend_, w * run, std::move(in), {{at(recv, a * es), me * run, run}},
                 [&](char* h) { return inner_->reduce_scatter_async(h, h + me * run, w * n, t, op); });
  });
}

CommHandlePtr HostStagedCommunicator::all_gather_async(const void* send, void* recv, size_t count, DType t) {
  check_even_split(CommOp::AllGather, count, world_size());
  if (count == 0) return inner_->all_gather_async(send, recv, 0, t);
  const size_t w = size_t(world_size()), me = size_t(rank()), es = dtype_size(t);
  return by_shard_runs(count, w, es, staging_->chunk_bytes(), recv, [&](size_t a, size_t n, std::vector<Piece> back) {
    const size_t run = n * es;
    return stage(staging_, backend_, w * run, {{at(send, a * es), me * run, run}}, std::move(back),
                 [&](char* h) { return inner_->all_gather_async(h + me * run, h, w * n, t); });
  });
}

CommHandlePtr HostStagedCommunicator::all_to_all_async(const void* send, void* recv, size_t count, DType t) {
  check_all_to_all(send, recv, count, t, world_size());
  if (count == 0) return inner_->all_to_all_async(send, recv, 0, t);
  const size_t w = size_t(world_size()), es = dtype_size(t), chunk = count / w;
  // A slot holds what this rank sends to every rank, then what it receives from every rank.
  const size_t per = run_elements(staging_->chunk_bytes(), 2 * w, es);
  std::vector<std::shared_ptr<StagedChunk>> chunks;
  for (size_t a = 0; a < chunk; a += per) {
    const size_t n = std::min(per, chunk - a), run = n * es;
    std::vector<Piece> in, back;
    for (size_t r = 0; r < w; ++r) {
      add_piece(in, {at(send, (r * chunk + a) * es), r * run, run});
      add_piece(back, {at(recv, (r * chunk + a) * es), (w + r) * run, run});
    }
    chunks.push_back(stage(staging_, backend_, 2 * w * run, in, std::move(back),
                           [&](char* h) { return inner_->all_to_all_async(h, h + w * run, w * n, t); }));
  }
  return std::make_shared<StagedHandle>(std::move(chunks));
}

CommHandlePtr HostStagedCommunicator::broadcast_async(void* buf_dev, size_t count, DType t, int root) {
  check_root(root, world_size());
  if (count == 0) return inner_->broadcast_async(buf_dev, 0, t, root);
  const size_t es = dtype_size(t), per = run_elements(staging_->chunk_bytes(), 1, es);
  const bool is_root = rank() == root;
  std::vector<std::shared_ptr<StagedChunk>> chunks;
  for (size_t a = 0; a < count; a += per) {
    const size_t n = std::min(per, count - a), bytes = n * es;
    chunks.push_back(stage(staging_, backend_, bytes, {{at(buf_dev, a * es), 0, is_root ? bytes : 0}},
                           {{at(buf_dev, a * es), 0, is_root ? 0 : bytes}},
                           [&](char* h) { return inner_->broadcast_async(h, n, t, root); }));
  }
  return std::make_shared<StagedHandle>(std::move(chunks));
}

// Segments: cut into runs of at most a slot (a segment split where a run ends, each part keeping its
// owner; every rank cuts the same way since the counts are the same), each run packed back to back
// in one slot (in list order), the inner communicator's segment op on host segments of the same
// counts and owners, and only the segments the op changes copied back (reduce-scatter: the ones this
// rank owns; all-gather: the others; all-reduce: all).
CommHandlePtr HostStagedCommunicator::segments_async(CommOp op, const std::vector<Segment>& segments, DType t,
                                                     ReduceOp rop) {
  if (op != CommOp::AllGather) check_reduction(op, t, rop);
  check_segments(op, segments, world_size());
  const size_t es = dtype_size(t), per = run_elements(staging_->chunk_bytes(), 1, es);
  // The runs: each a list of (device pointer, count, owner) parts.
  std::vector<std::vector<Segment>> runs(1);
  size_t room = per;
  for (const Segment& sg : segments) {
    size_t done = 0;
    do {
      if (room == 0) {
        runs.emplace_back();
        room = per;
      }
      const size_t n = std::min(room, sg.count - done);
      runs.back().push_back({at(sg.data, done * es), n, sg.owner});
      done += n;
      room -= n;
    } while (done < sg.count);
  }
  std::vector<std::shared_ptr<StagedChunk>> chunks;
  for (const std::vector<Segment>& run : runs) {
    std::vector<Piece> in, back;
    size_t off = 0;
    for (const Segment& sg : run) {
      const Piece p{sg.data, off, sg.count * es};
      const bool mine = sg.owner == rank();
      if (op != CommOp::AllGather || mine) in.push_back(p);
      if (op == CommOp::AllReduce || (op == CommOp::ReduceScatter) == mine) back.push_back(p);
      off += p.bytes;
    }
    chunks.push_back(stage(staging_, backend_, std::max<size_t>(off, 1), in, std::move(back), [&](char* h) {
      std::vector<Segment> hs(run.size());
      size_t o = 0;
      for (size_t i = 0; i < run.size(); ++i) {
        hs[i] = {h + o, run[i].count, run[i].owner};
        o += run[i].count * es;
      }
      if (op == CommOp::ReduceScatter) return inner_->reduce_scatter_segments_async(hs, t, rop);
      if (op == CommOp::AllReduce) return inner_->all_reduce_segments_async(hs, t, rop);
      return inner_->all_gather_segments_async(hs, t);
    }));
  }
  return std::make_shared<StagedHandle>(std::move(chunks));
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
