// CopyLane: the CPU backend's stand-in for a GPU's copy engine — one thread that runs memcpy jobs in
// issue order, so that the engine's asynchronous offload transfers really overlap host work here
// too (a missing wait_copy shows up as wrong bits in the CPU tests, not only on a GPU).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>

namespace zt::cpu {

class CopyLane {
 public:
  CopyLane();
  ~CopyLane();  // drains every queued copy
  CopyLane(const CopyLane&) = delete;
  CopyLane& operator=(const CopyLane&) = delete;

  // Queues memcpy(dst, src, bytes); returns its ticket (1, 2, 3, ... in issue order).
  uint64_t submit(void* dst, const void* src, size_t bytes);
  // Returns once copy `ticket` and every copy before it are done (0 and done tickets return at once).
  void wait(uint64_t ticket);
  void drain();  // waits for every copy submitted so far

 private:
  struct Job {
    void* dst;
    const void* src;
    size_t bytes;
  };
  void loop();
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<Job> jobs_;
  uint64_t submitted_ = 0, completed_ = 0;
  bool stop_ = false;
  std::thread worker_;  // last: started once the members above exist
};

}  // namespace zt::cpu
