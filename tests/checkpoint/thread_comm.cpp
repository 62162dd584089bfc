// Thread communicator: one shared exchange table and a generation barrier per group.
#include "tests/checkpoint/thread_comm.h"

#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace zt::test {

namespace {

struct Group {
  explicit Group(int w) : world(w), posted(size_t(w)) {}
  int world;
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
  uint64_t generation = 0;
  bool broken = false;
  struct Post {
    const void* send = nullptr;
    size_t bytes = 0;
  };
  std::vector<Post> posted;

  void wait_all() {
    std::unique_lock<std::mutex> lock(mu);
    if (broken) throw std::runtime_error("thread group broken: another rank failed");
    const uint64_t gen = generation;
    if (++arrived == world) {
      arrived = 0;
      ++generation;
      cv.notify_all();
      return;
    }
    cv.wait(lock, [&] { return generation != gen || broken; });
    if (generation == gen) throw std::runtime_error("thread group broken: another rank failed");
  }
  void breakdown() {
    std::lock_guard<std::mutex> lock(mu);
    broken = true;
    cv.notify_all();
  }
};

struct DoneHandle : CommHandle {
  void wait() override {}
  bool done() override { return true; }
};

class ThreadCommunicator final : public Communicator {
 public:
  ThreadCommunicator(Group& g, int rank) : g_(g), rank_(rank) {}
  int rank() const override { return rank_; }
  int world_size() const override { return g_.world; }
  std::string name() const override { return "threads"; }

  CommHandlePtr all_gather_async(const void* send, void* recv, size_t count, DType t) override {
    const size_t slice = count / size_t(g_.world) * dtype_size(t);
    g_.posted[size_t(rank_)] = {send, slice};
    g_.wait_all();
    std::vector<char> mine(static_cast<const char*>(send), static_cast<const char*>(send) + slice);
    for (int r = 0; r < g_.world; ++r)
      if (r != rank_) std::memcpy(static_cast<char*>(recv) + size_t(r) * slice, g_.posted[size_t(r)].send, slice);
    g_.wait_all();  // nobody overwrites a buffer another rank still reads
    std::memcpy(static_cast<char*>(recv) + size_t(rank_) * slice, mine.data(), slice);
    return std::make_shared<DoneHandle>();
  }
  CommHandlePtr broadcast_async(void* buf, size_t count, DType t, int root) override {
    const size_t bytes = count * dtype_size(t);
    g_.posted[size_t(rank_)] = {buf, bytes};
    g_.wait_all();
    if (rank_ != root) std::memcpy(buf, g_.posted[size_t(root)].send, bytes);
    g_.wait_all();
    return std::make_shared<DoneHandle>();
  }
  CommHandlePtr barrier_async() override {
    g_.wait_all();
    return std::make_shared<DoneHandle>();
  }
  // Checkpoints never reduce; a call here is a bug in the code under test.
  CommHandlePtr all_reduce_async(const void*, void*, size_t, DType, ReduceOp) override {
    throw std::logic_error("ThreadCommunicator: all_reduce is not used by checkpoint code");
  }
  CommHandlePtr reduce_scatter_async(const void*, void*, size_t, DType, ReduceOp) override {
    throw std::logic_error("ThreadCommunicator: reduce_scatter is not used by checkpoint code");
  }
  CommHandlePtr reduce_scatter_segments_async(const std::vector<Segment>&, DType, ReduceOp) override {
    throw std::logic_error("ThreadCommunicator: reduce_scatter_segments is not used by checkpoint code");
  }
  CommHandlePtr all_reduce_segments_async(const std::vector<Segment>&, DType, ReduceOp) override {
    throw std::logic_error("ThreadCommunicator: all_reduce_segments is not used by checkpoint code");
  }
  CommHandlePtr all_gather_segments_async(const std::vector<Segment>&, DType) override {
    throw std::logic_error("ThreadCommunicator: all_gather_segments is not used by checkpoint code");
  }
  CommStats stats() const override { return {}; }
  void reset_stats() override {}

 private:
  Group& g_;
  int rank_;
};

}  // namespace

std::vector<std::exception_ptr> run_ranks_collect(int world, const RankFn& fn, int* first) {
  Group g(world);
  std::vector<std::exception_ptr> errors(static_cast<size_t>(world));
  std::mutex mu;
  int first_rank = -1;
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      ThreadCommunicator comm(g, r);
      try {
        fn(r, comm);
      } catch (...) {
        errors[size_t(r)] = std::current_exception();
        {
          std::lock_guard<std::mutex> lock(mu);
          if (first_rank < 0) first_rank = r;
        }
        g.breakdown();
      }
    });
  for (auto& t : threads) t.join();
  if (first) *first = first_rank;
  return errors;
}

std::vector<std::exception_ptr> run_ranks_collect(int world, const RankFn& fn) { return run_ranks_collect(world, fn, nullptr); }

void run_ranks(int world, const RankFn& fn) {
  int first = -1;
  auto errors = run_ranks_collect(world, fn, &first);
  if (first >= 0) std::rethrow_exception(errors[size_t(first)]);
}

}  // namespace zt::test
