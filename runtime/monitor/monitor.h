// Monitors: where per-step scalars go — csv_monitor and tensorboard, laid out as DeepSpeed's
// (output_path/job_name/) — behind one sink interface that the run reporter writes (tag, value, x) to.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/common/diagnostics.h"
#include "runtime/config/config.h"

namespace zt {

// One scalar, as DeepSpeed's monitors take it: ("Train/Samples/train_loss", value, samples so far).
struct MonitorEvent {
  std::string tag;
  double value = 0;
  int64_t x = 0;  // samples consumed after the step (DeepSpeed's global_samples)
};

class MonitorSink {
 public:
  virtual ~MonitorSink() = default;
  // Records the events and makes them durable (flushed). Throws std::runtime_error with the file
  // and the system's reason when a write fails.
  virtual void write(const std::vector<MonitorEvent>& events) = 0;
  virtual std::string describe() const = 0;  // "csv_monitor: out/job/ (one CSV per metric)"
};

// The folder DeepSpeed's monitors write to: output_path/job_name ("" output_path = the current folder).
std::string monitor_folder(const MonitorConfig& m);
// Creates the folder (and its parents) and checks that a file can be created in it; throws
// std::runtime_error naming the folder and the system's reason.
void probe_folder(const std::string& folder);

class Monitors {
 public:
  Monitors() = default;
  // The sinks the config enables, created on rank 0 only (the other ranks get none, as DeepSpeed's).
  // A folder that cannot be created is reported in `d` with its key, value and fix.
  static Monitors from_config(const Config& c, bool rank0, Diagnostics& d);
  void add(std::unique_ptr<MonitorSink> sink) { sinks_.push_back(std::move(sink)); }
  void write(const std::vector<MonitorEvent>& events);
  bool empty() const { return sinks_.empty(); }
  std::vector<std::string> describe() const;

 private:
  std::vector<std::unique_ptr<MonitorSink>> sinks_;
};

// csv_monitor: one file per tag, DeepSpeed's name (tag with '/' and ' ' as '_', plus ".csv"), a
// "step,<last tag component>" header when the file is new, then "x,value" rows, appended.
std::unique_ptr<MonitorSink> make_csv_monitor(const std::string& folder);
// tensorboard: one new event file in the folder, one scalar summary per event (step = x).
std::unique_ptr<MonitorSink> make_tensorboard_monitor(const std::string& folder);

}  // namespace zt
