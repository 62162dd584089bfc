// CopyLane: a FIFO of memcpy jobs on one worker thread, with monotonically increasing tickets.
#include "kernels/cpu/copy_lane.h"

#include <cstring>

namespace zt::cpu {

CopyLane::CopyLane() : worker_([this] { loop(); }) {}

CopyLane::~CopyLane() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  worker_.join();
}

uint64_t CopyLane::submit(void* dst, const void* src, size_t bytes) {
  uint64_t t;
  {
    std::lock_guard<std::mutex> lk(mu_);
    jobs_.push_back({dst, src, bytes});
    t = ++submitted_;
  }
  work_cv_.notify_one();
  return t;
}

void CopyLane::wait(uint64_t ticket) {
  std::unique_lock<std::mutex> lk(mu_);
  done_cv_.wait(lk, [&] { return completed_ >= ticket; });
}

void CopyLane::drain() {
  std::unique_lock<std::mutex> lk(mu_);
  done_cv_.wait(lk, [&] { return completed_ >= submitted_; });
}

void CopyLane::loop() {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    work_cv_.wait(lk, [&] { return stop_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stop_ with nothing left: the destructor drained the queue
    const Job j = jobs_.front();
    lk.unlock();
    if (j.bytes) std::memcpy(j.dst, j.src, j.bytes);
    lk.lock();
    jobs_.pop_front();
    ++completed_;
    done_cv_.notify_all();
  }
}

}  // namespace zt::cpu
