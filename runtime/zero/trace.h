// Trace: one rank's timeline as Chrome trace events (open in chrome://tracing or Perfetto) — compute
// spans per unit on one track, each collective from issue to observed completion on another.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace zt {

enum class TraceTrack { Compute, Comm, Wait };

class Trace {
 public:
  using Clock = std::chrono::steady_clock;
  Trace() : origin_(Clock::now()) {}
  void span(std::string name, TraceTrack track, Clock::time_point begin, Clock::time_point end);
  size_t size() const { return events_.size(); }
  // {"traceEvents": [...]} with one "X" (complete) event per span, microseconds since construction.
  nlohmann::json to_json(int rank) const;
  // Throws std::runtime_error naming the path when it cannot be written.
  void write(const std::string& path, int rank) const;

 private:
  struct Event {
    std::string name;
    TraceTrack track;
    double begin_us, dur_us;
  };
  Clock::time_point origin_;
  std::vector<Event> events_;
};

}  // namespace zt
