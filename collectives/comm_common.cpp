// Names, argument checks, byte accounting and option parsing shared by all communicators.
#include "collectives/comm_common.h"

#include <cerrno>
#include <cstdlib>
#include <stdexcept>

#include "collectives/comm_options.h"

namespace zt {

const char* comm_op_name(CommOp op) {
  switch (op) {
    case CommOp::AllReduce: return "all_reduce";
    case CommOp::ReduceScatter: return "reduce_scatter";
    case CommOp::AllGather: return "all_gather";
    case CommOp::Broadcast: return "broadcast";
    case CommOp::Barrier: return "barrier";
    case CommOp::AllToAll: return "all_to_all";
  }
  return "unknown_op";
}

const char* reduce_op_name(ReduceOp op) { return op == ReduceOp::Sum ? "sum" : "avg"; }

void check_even_split(CommOp op, size_t count, int world_size) {
  if (world_size > 0 && count % size_t(world_size) != 0) {
    throw std::invalid_argument(std::string(comm_op_name(op)) + ": count " + std::to_string(count) +
                                " does not split evenly over world size " + std::to_string(world_size) +
                                " (remainder " + std::to_string(count % size_t(world_size)) +
                                "); the caller must pad to a multiple of W");
  }
}

void check_reduction(CommOp op, DType t, ReduceOp r) {
  if (t == DType::U8) {
    throw std::invalid_argument(std::string(comm_op_name(op)) +
                                ": uint8 buffers are packed bits moved unchanged; they are never reduced "
                                "(use all_gather or all_to_all)");
  }
  if (t == DType::I64 && r == ReduceOp::Avg) {
    throw std::invalid_argument(std::string(comm_op_name(op)) +
                                ": average of i64 is not defined (integer division would truncate); "
                                "use ReduceOp::Sum and divide where the rounding is known");
  }
}

void check_root(int root, int world_size) {
  if (root < 0 || root >= world_size) {
    throw std::invalid_argument("broadcast: root " + std::to_string(root) + " is outside [0, " +
                                std::to_string(world_size) + ")");
  }
}

size_t check_segments(CommOp op, const std::vector<Segment>& segments, int world_size, size_t limit) {
  size_t total = 0;
  for (size_t i = 0; i < segments.size(); ++i) {
    const Segment& s = segments[i];
    if (s.owner < 0 || s.owner >= world_size)
      throw std::invalid_argument(std::string(comm_op_name(op)) + ": segment " + std::to_string(i) + " has owner " +
                                  std::to_string(s.owner) + " outside [0, " + std::to_string(world_size) + ")");
    if (s.count && !s.data)
      throw std::invalid_argument(std::string(comm_op_name(op)) + ": segment " + std::to_string(i) + " has " +
                                  std::to_string(s.count) + " elements but no buffer");
    total += s.count;
  }
  if (total > limit)
    throw std::invalid_argument(std::string(comm_op_name(op)) + ": a bucket of " + std::to_string(total) +
                                " elements exceeds this communicator's limit of " + std::to_string(limit) +
                                "; use a smaller bucket size");
  return total;
}

std::unique_ptr<Communicator> Communicator::split(int, int) {
  throw std::logic_error(name() + " communicator: split() is not available here");
}

CommHandlePtr Communicator::all_to_all_async(const void*, void*, size_t, DType) {
  throw std::logic_error(name() + " communicator: all_to_all is not available here");
}

void check_all_to_all(const void* send, const void* recv, size_t count, DType t, int world_size) {
  check_even_split(CommOp::AllToAll, count, world_size);
  const auto* s = static_cast<const char*>(send);
  const auto* r = static_cast<const char*>(recv);
  const size_t bytes = count * dtype_size(t);
  if (count && s < r + bytes && r < s + bytes)
    throw std::invalid_argument("all_to_all: the send and receive buffers overlap (" + std::to_string(count) +
                                " elements); it has no in-place form");
}

uint64_t comm_algorithm_bytes(CommOp op, size_t count, DType t) {
  return op == CommOp::Barrier ? 0 : uint64_t(count) * dtype_size(t);
}

void CommStatsTable::add(CommOp op, uint64_t bytes, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  CommOpStats& s = stats_.op[int(op)];
  s.calls += 1;
  s.bytes += bytes;
  s.busy_seconds += seconds;
  CommSizeStats& z = stats_.by_size[{op, bytes}];
  z.calls += 1;
  z.busy_seconds += seconds;
}

CommStats CommStatsTable::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void CommStatsTable::reset() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_ = CommStats{};
}

CommOptions CommOptions::from_env() {
  CommOptions o;
  if (const char* v = std::getenv("ZT_COMM_TIMEOUT_S"); v && *v) {
    char* end = nullptr;
    errno = 0;
    double t = std::strtod(v, &end);
    if (errno != 0 || end == v || *end != '\0' || !(t > 0)) {
      throw std::invalid_argument(std::string("ZT_COMM_TIMEOUT_S = '") + v +
                                  "' is not a positive number of seconds; set e.g. ZT_COMM_TIMEOUT_S=300");
    }
    o.timeout_s = t;
  }
  if (const char* v = std::getenv("ZT_COMM_DEBUG"); v && *v) {
    std::string s(v);
    if (s == "1" || s == "true" || s == "on") {
      o.debug = true;
    } else if (s == "0" || s == "false" || s == "off") {
      o.debug = false;
    } else {
      throw std::invalid_argument("ZT_COMM_DEBUG = '" + s + "' is not 0/1 (also accepted: true/false, on/off)");
    }
  }
  if (const char* v = std::getenv("ZT_COMM_BUFFER_MB"); v && *v) {
    char* end = nullptr;
    errno = 0;
    const double mb = std::strtod(v, &end);
    if (errno != 0 || end == v || *end != '\0' || !(mb >= 1) || mb > 1048576) {
      throw std::invalid_argument(std::string("ZT_COMM_BUFFER_MB = '") + v +
                                  "' is not a number of MiB between 1 and 1048576; set e.g. ZT_COMM_BUFFER_MB=64 "
                                  "(the communicator's working buffers, both together)");
    }
    o.buffer_bytes = uint64_t(mb * 1048576.0);
  }
  return o;
}

}  // namespace zt
