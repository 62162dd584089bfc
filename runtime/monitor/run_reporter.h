// RunReporter: what a training run tells its user, and where — the header (what the run will do,
// where its outputs go), one readable progress line per printed step (ETA, tokens/s, memory), the
// metrics file, the monitors (csv_monitor, tensorboard), the comms logger and the flops profile.
#pragma once

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "collectives/communicator.h"
#include "kernels/backend.h"
#include "runtime/config/config.h"
#include "runtime/engine/engine.h"
#include "runtime/monitor/comms_logger.h"
#include "runtime/monitor/flops_profiler.h"
#include "runtime/monitor/monitor.h"
#include "runtime/monitor/process_memory_report.h"
#include "runtime/plan/memory_plan.h"
#include "runtime/common/output_file.h"

namespace zt {

// The instruments a config asks for, made before the engine (the profiler measures the device's
// peak on `backend` before the engine allocates). make() checks the monitor, comms_logger and
// flops_profiler keys and throws UserError with every problem (key, value, fix).
struct RunInstruments {
  Monitors monitors;                        // rank 0 only
  std::unique_ptr<FlopsProfiler> profiler;  // rank 0 with flops_profiler.enabled
  static RunInstruments make(const Config& c, const ModelConfig& model, int micro_batch, int grad_accum, int64_t steps,
                             int rank, int world_size, Backend& backend);
};

struct ReportSetup {
  const Config* cfg = nullptr;
  const EngineOptions* eo = nullptr;
  const MemoryPlan* plan = nullptr;
  const ModelConfig* model = nullptr;
  std::string config_name;        // the file, or "built-in config"
  std::string data_description;
  std::string metrics_path, trace_path;
  std::string checkpoints = "none (no --save)";  // where and when the run saves
  int64_t steps = 0;
  std::string run_length;         // what the header's "run:" line says ("" : the config's run length)
  uint64_t process_baseline = 0;  // this rank's resident bytes at start-up (process_memory.h)
  std::FILE* say = nullptr;       // rank 0's console (null: quiet)
  OutputFile* metrics = nullptr;     // --metrics, opened at start-up; every write checked
  OutputFile* trace_file = nullptr;  // --trace, likewise
};

class RunReporter {
 public:
  RunReporter(ReportSetup setup, Engine& engine, Communicator& comm, Backend& backend, RunInstruments& instruments);
  // Detaches the profiler's recorder from the backend (a profiled step that threw left it attached).
  ~RunReporter();
  RunReporter(const RunReporter&) = delete;
  RunReporter& operator=(const RunReporter&) = delete;

  // The start record, the first step's and the end record carry every rank's resident set
  // (ProcessMemoryReport): start, after_step's first call and finish are collective.
  void start();                                // header, plan, allocations, metrics start record
  void before_step(int64_t step);              // accounting snapshot; the profiler's recorder at its step
  double after_step(const StepStats& st);      // progress line, records, monitors; returns tokens/s
  void validation(int64_t step, double val_loss);
  // The end of training and validation: the comms summary covers what happened until here (not the
  // consolidation of the parameters for the checksum that follows).
  void training_done();
  // Trace file, comms summary, hidden-communication share, the final line and the end record.
  void finish(int64_t steps, double final_val_loss, double unigram_entropy, double median_tokens_per_s,
              const ParamSummary& summary);
  // A stop signal ended the run at a step boundary: the trace and a "stopped" record.
  void stopped(int64_t step, const char* signal, bool checkpoint_saved);

 private:
  void record(const nlohmann::json& j);        // one metrics line, written through and checked
  void write_trace();
  std::string header() const;
  nlohmann::json units_json() const;  // each unit's parameters and padded length, walk order
  std::string progress(const StepStats& st, double rate) const;
  void say_zero_one_phase(const StepStats& st);
  std::vector<MonitorEvent> events(const StepStats& st, double rate) const;

  ReportSetup s_;
  Engine& engine_;
  Communicator& comm_;
  Backend& backend_;
  RunInstruments& inst_;
  CommsLogger comms_;
  ProcessMemoryReport process_;
  bool first_step_done_ = false;
  bool compressed_said_ = false;  // 1-bit Adam's switch to compression (0/1 Adam's first compressed step) was announced
  bool frozen_said_ = false;      // 0/1 Adam's frozen phase was announced
  int world_ = 1;
  double tokens_per_step_ = 0;
  int64_t samples_per_step_ = 0;
  CommStats step_before_, final_stats_;
  QuantError quant_weights_, quant_grads_;  // the run's qwZ and qgZ totals (the comms logger's levels and scales)
  nlohmann::json resident_, peak_by_category_;  // the ledger when training and validation ended
  double comm_busy_s_ = 0;                      // this rank's communicator, steps after the first
  size_t trace_before_ = 0;
  std::vector<std::pair<size_t, size_t>> trace_steps_;  // trace span ranges of those steps
  std::vector<double> step_seconds_;
  bool metrics_failed_ = false;  // after a failed write nothing more is written
};

}  // namespace zt
