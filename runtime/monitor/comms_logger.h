// CommsLogger: DeepSpeed's comms_logger over the communicator's own accounting — per collective and
// message size the count, total and mean latency, algbw and busbw (nccl-tests), per step and in total.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "collectives/communicator.h"
#include "runtime/common/diagnostics.h"
#include "runtime/config/config.h"

namespace zt {

// nccl-tests' definitions for a call moving `bytes` (the full buffer: CommOpStats' algorithm bytes)
// in `seconds` among n ranks: algbw = bytes / seconds; busbw = algbw · 2(n−1)/n for all-reduce,
// · (n−1)/n for reduce-scatter and all-gather, · 1 for broadcast (0 for a barrier). Bytes per second.
double comm_algbw(uint64_t bytes, double seconds);
double comm_busbw(CommOp op, uint64_t bytes, double seconds, int n);

// One row of the table: one collective at one message size.
struct CommsRow {
  CommOp op = CommOp::AllReduce;
  uint64_t message_bytes = 0;  // algorithm bytes of one call
  uint64_t calls = 0;
  double seconds = 0;          // total latency as the communicator measured it
  double mean_seconds() const { return calls ? seconds / double(calls) : 0; }
};

class CommsLogger {
 public:
  // Checks comms_logger.prof_ops: each name must be a collective zerotrain runs (DeepSpeed's
  // spellings all_gather_into_tensor / reduce_scatter_tensor / *_base are accepted for ours).
  static void check(const CommsLoggerConfig& c, Diagnostics& d);

  CommsLogger(const CommsLoggerConfig& c, int world_size, const CommStats& start);
  bool enabled() const { return enabled_; }
  bool verbose() const { return enabled_ && verbose_; }
  bool logs(CommOp op) const;  // prof_all, or op named in prof_ops

  // Rows of what happened between two snapshots of the communicator's accounting (logged ops only).
  std::vector<CommsRow> rows(const CommStats& before, const CommStats& after) const;
  // Everything since construction.
  std::vector<CommsRow> totals(const CommStats& now) const { return rows(start_, now); }

  // DeepSpeed's verbose lines, one per collective and size in the step.
  std::string step_lines(int64_t step, const CommStats& before, const CommStats& after) const;
  // DeepSpeed's log_summary() table, with a total line per collective.
  std::string summary(const CommStats& now) const;
  nlohmann::json summary_json(const CommStats& now) const;

 private:
  bool enabled_ = false, verbose_ = false, prof_all_ = true;
  std::vector<CommOp> prof_ops_;
  int world_ = 1;
  CommStats start_;
};

// "678.86 MB" (DeepSpeed's convert_size: powers of 1024).
std::string human_bytes(uint64_t bytes);

}  // namespace zt
