// QueuedHandle: the CommHandle of work run by a communication thread; the thread completes it
// (optionally with an exception), callers wait() or poll done().
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>

#include "collectives/communicator.h"

namespace zt {

class QueuedHandle final : public CommHandle {
 public:
  void wait() override {
    if (help_ && !done()) help_();  // the waiter may run the work itself (never blocks for long)
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return done_; });
    if (error_) std::rethrow_exception(error_);
  }
  bool done() override {
    std::lock_guard<std::mutex> lock(mu_);
    return done_;
  }
  // What wait() tries first: run the work on the waiting thread if the runner has not started it.
  void set_helper(std::function<bool()> help) { help_ = std::move(help); }
  void complete(std::exception_ptr error = nullptr) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
      error_ = error;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::function<bool()> help_;
  std::exception_ptr error_;
};

}  // namespace zt
