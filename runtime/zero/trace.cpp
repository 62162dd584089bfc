// Trace: span recording and the Chrome trace-event JSON writer.
#include "runtime/zero/trace.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace zt {

namespace {
const char* track_name(TraceTrack t) {
  switch (t) {
    case TraceTrack::Compute: return "compute";
    case TraceTrack::Comm: return "collectives (issue to observed completion)";
    case TraceTrack::Wait: return "waiting for collectives";
  }
  return "?";
}
}  // namespace

void Trace::span(std::string name, TraceTrack track, Clock::time_point begin, Clock::time_point end) {
  const auto us = [&](Clock::time_point t) { return std::chrono::duration<double, std::micro>(t - origin_).count(); };
  events_.push_back({std::move(name), track, us(begin), std::max(0.0, us(end) - us(begin))});
}

nlohmann::json Trace::to_json(int rank) const {
  nlohmann::json ev = nlohmann::json::array();
  for (TraceTrack t : {TraceTrack::Compute, TraceTrack::Comm, TraceTrack::Wait})
    ev.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", rank}, {"tid", int(t)}, {"args", {{"name", track_name(t)}}}});
  for (const auto& e : events_)
    ev.push_back({{"ph", "X"}, {"name", e.name}, {"pid", rank}, {"tid", int(e.track)}, {"ts", e.begin_us}, {"dur", e.dur_us}});
  return {{"traceEvents", ev}, {"displayTimeUnit", "ms"}};
}

void Trace::write(const std::string& path, int rank) const {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write the trace file " + path + ": " + std::strerror(errno));
  out << to_json(rank).dump() << "\n";
  if (!out) throw std::runtime_error("writing the trace file " + path + " failed: " + std::strerror(errno));
}

}  // namespace zt
