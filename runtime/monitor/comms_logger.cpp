// CommsLogger: rows from the differences of two CommStats snapshots (the per-size table the
// communicators fill on completion), rendered as DeepSpeed's summary table and verbose lines.
#include "runtime/monitor/comms_logger.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace zt {

namespace {

struct OpName {
  const char* name;
  CommOp op;
};
// Ours first, then DeepSpeed's names for the same collectives.
constexpr OpName kOpNames[] = {
    {"all_reduce", CommOp::AllReduce},          {"reduce_scatter", CommOp::ReduceScatter},
    {"all_gather", CommOp::AllGather},          {"broadcast", CommOp::Broadcast},
    {"barrier", CommOp::Barrier},               {"all_to_all", CommOp::AllToAll},
    {"all_to_all_single", CommOp::AllToAll},    {"all_gather_into_tensor", CommOp::AllGather},
    {"all_gather_base", CommOp::AllGather},     {"reduce_scatter_tensor", CommOp::ReduceScatter},
    {"reduce_scatter_base", CommOp::ReduceScatter}, {"inference_all_reduce", CommOp::AllReduce},
};

const OpName* find_op(const std::string& s) {
  for (const auto& n : kOpNames)
    if (s == n.name) return &n;
  return nullptr;
}

std::string fixed(double v, int digits = 2) {
  char b[48];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}

std::string pad(std::string s, size_t w) {
  if (s.size() < w) s.append(w - s.size(), ' ');
  return s;
}

}  // namespace

double comm_algbw(uint64_t bytes, double seconds) { return seconds > 0 ? double(bytes) / seconds : 0; }

double comm_busbw(CommOp op, uint64_t bytes, double seconds, int n) {
  const double a = comm_algbw(bytes, seconds);
  switch (op) {
    case CommOp::AllReduce: return a * 2.0 * (n - 1) / n;
    case CommOp::ReduceScatter:
    case CommOp::AllGather:
    case CommOp::AllToAll: return a * double(n - 1) / n;
    case CommOp::Broadcast: return a;
    case CommOp::Barrier: return 0;
  }
  return 0;
}

std::string human_bytes(uint64_t bytes) {
  if (bytes == 0) return "0B";
  static const char* names[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  const int i = std::min(5, int(std::floor(std::log(double(bytes)) / std::log(1024.0))));
  const double v = std::round(double(bytes) / std::pow(1024.0, i) * 100.0) / 100.0;
  char b[48];
  std::snprintf(b, sizeof b, "%g %s", v, names[i]);
  return b;
}

void CommsLogger::check(const CommsLoggerConfig& c, Diagnostics& d) {
  const auto& ops = c.prof_ops.value;
  for (size_t i = 0; i < ops.size(); ++i)
    if (!find_op(ops[i]))
      d.error("comms_logger.prof_ops[" + std::to_string(i) + "]", "\"" + ops[i] + "\"",
              "not a collective zerotrain runs",
              "use all_reduce, reduce_scatter, all_gather, broadcast or barrier (DeepSpeed's "
              "all_gather_into_tensor and reduce_scatter_tensor are accepted too)");
  if (c.enabled.value && !c.prof_all.value && ops.empty())
    d.warning("comms_logger.prof_ops", "[]", "prof_all is false and prof_ops names nothing: no collective will be logged",
              "set prof_all to true or list the collectives in prof_ops");
}

CommsLogger::CommsLogger(const CommsLoggerConfig& c, int world_size, const CommStats& start)
    : enabled_(c.enabled.value), verbose_(c.verbose.value), prof_all_(c.prof_all.value), world_(world_size),
      start_(start) {
  for (const auto& s : c.prof_ops.value)
    if (const OpName* n = find_op(s)) prof_ops_.push_back(n->op);
}

bool CommsLogger::logs(CommOp op) const {
  return prof_all_ || std::find(prof_ops_.begin(), prof_ops_.end(), op) != prof_ops_.end();
}

std::vector<CommsRow> CommsLogger::rows(const CommStats& before, const CommStats& after) const {
  std::vector<CommsRow> out;
  for (const auto& [key, now] : after.by_size) {
    if (!logs(key.first)) continue;
    CommSizeStats was;
    if (auto it = before.by_size.find(key); it != before.by_size.end()) was = it->second;
    if (now.calls == was.calls) continue;
    out.push_back({key.first, key.second, now.calls - was.calls, now.busy_seconds - was.busy_seconds});
  }
  return out;  // ordered by op, then message size (the map's order)
}

std::string CommsLogger::step_lines(int64_t step, const CommStats& before, const CommStats& after) const {
  std::string s;
  for (const auto& r : rows(before, after)) {
    const double t = r.mean_seconds();
    s += "comms | step " + std::to_string(step) + " | comm op: " + comm_op_name(r.op) + " | count: " +
         std::to_string(r.calls) + " | time (ms): " + fixed(1e3 * t) + " | msg size: " + human_bytes(r.message_bytes) +
         " | algbw (GB/s): " + fixed(comm_algbw(r.message_bytes, t) / 1e9) +
         " | busbw (GB/s): " + fixed(comm_busbw(r.op, r.message_bytes, t, world_) / 1e9) + "\n";
  }
  return s;
}

std::string CommsLogger::summary(const CommStats& now) const {
  constexpr size_t w = 20;
  std::string s = pad("Comm. Op", w) + pad("Message Size", w) + pad("Count", w) + pad("Total Latency(ms)", w) +
                  pad("Avg Latency(ms)", w) + pad("algbw_avg (GB/s)", w) + "busbw_avg (GB/s)\n";
  const auto all = totals(now);
  for (int o = 0; o < kCommOpCount; ++o) {
    uint64_t calls = 0, bytes = 0;
    double secs = 0;
    bool any = false;
    for (const auto& r : all) {
      if (int(r.op) != o) continue;
      if (!any) s += std::string(comm_op_name(r.op)) + "\n";
      any = true;
      const double t = r.mean_seconds();
      s += pad("", w) + pad(human_bytes(r.message_bytes), w) + pad(std::to_string(r.calls), w) +
           pad(fixed(1e3 * r.seconds), w) + pad(fixed(1e3 * t), w) + pad(fixed(comm_algbw(r.message_bytes, t) / 1e9), w) +
           fixed(comm_busbw(r.op, r.message_bytes, t, world_) / 1e9) + "\n";
      calls += r.calls;
      bytes += r.calls * r.message_bytes;
      secs += r.seconds;
    }
    if (any)
      s += pad("", w) + pad("total " + human_bytes(bytes), w) + pad(std::to_string(calls), w) + fixed(1e3 * secs) + "\n";
  }
  return s;
}

nlohmann::json CommsLogger::summary_json(const CommStats& now) const {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : totals(now)) {
    const double t = r.mean_seconds();
    rows.push_back({{"op", comm_op_name(r.op)},
                    {"message_bytes", r.message_bytes},
                    {"count", r.calls},
                    {"total_ms", 1e3 * r.seconds},
                    {"mean_ms", 1e3 * t},
                    {"algbw_GBps", comm_algbw(r.message_bytes, t) / 1e9},
                    {"busbw_GBps", comm_busbw(r.op, r.message_bytes, t, world_) / 1e9}});
  }
  return rows;
}

}  // namespace zt
