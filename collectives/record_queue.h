// RecordQueue: the in-flight records of a communicator in issue order, each with a sequence
// number, retired from the front, and an open group's records remembered by sequence number (not by
// position: retiring shifts positions while a group is open). Plain C++, so the bookkeeping is
// tested without NCCL or a GPU (tests/collectives/test_record_queue.cpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

namespace zt {

// Record: any struct with `uint64_t seq` and `double share` (the fraction of its launch's time
// charged to it). Not thread-safe: the owner holds its lock around every call.
template <class Record>
class RecordQueue {
 public:
  // Gives r the next sequence number and appends it; inside an open group r joins the group.
  uint64_t push(Record r) {
    r.seq = next_seq_++;
    if (group_open_) group_.push_back(r.seq);
    q_.push_back(std::move(r));
    return q_.back().seq;
  }

  // Pops records from the front while finished(front) says it is done (finished may charge it);
  // stops at the first that is not. Returns how many were retired.
  template <class Finished>
  size_t retire(Finished&& finished) {
    size_t n = 0;
    while (!q_.empty() && finished(q_.front())) {
      q_.pop_front();
      ++n;
    }
    return n;
  }

  // Opens a group: records pushed until close_group() belong to it. No nesting (the owner counts
  // depth and opens and closes the outermost only).
  void open_group() {
    group_open_ = true;
    group_.clear();
  }
  bool group_open() const { return group_open_; }

  // Closes the group: each of its records still queued gets share 1/n, n the group's size.
  // Returns n.
  size_t close_group() {
    const size_t n = group_.size();
    const double share = n ? 1.0 / double(n) : 1.0;
    for (uint64_t s : group_)
      if (Record* r = find(s)) r->share = share;
    group_.clear();
    group_open_ = false;
    return n;
  }

  // The queued record with sequence number s, or nullptr once it is retired (or never issued).
  Record* find(uint64_t s) {
    auto it = std::lower_bound(q_.begin(), q_.end(), s, [](const Record& r, uint64_t v) { return r.seq < v; });
    return it != q_.end() && it->seq == s ? &*it : nullptr;
  }

  bool empty() const { return q_.empty(); }
  size_t size() const { return q_.size(); }
  Record& front() { return q_.front(); }
  const Record& front() const { return q_.front(); }
  uint64_t next_seq() const { return next_seq_; }

 private:
  std::deque<Record> q_;  // ascending seq
  uint64_t next_seq_ = 1;
  bool group_open_ = false;
  std::vector<uint64_t> group_;  // sequence numbers of the open group's records
};

}  // namespace zt
