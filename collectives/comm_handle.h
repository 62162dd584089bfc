// QueuedHandle: the CommHandle of work run by a communication thread; the thread completes it
// (optionally with an exception), callers wait() or poll done().
#pragma once

#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>

#include "collectives/communicator.h"

namespace zt {

class QueuedHandle final : public CommHandle {
 public:
  void wait() override {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return done_; });
    if (error_) std::rethrow_exception(error_);
  }
  bool done() override {
    std::lock_guard<std::mutex> lock(mu_);
    return done_;
  }
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
  std::exception_ptr error_;
};

}  // namespace zt
