// FlopsProfiler: DeepSpeed's flops_profiler for one training step — per unit (embedding, blocks,
// head) and per op the parameters, FLOPs, latency and FLOP/s, and the step's MFU against the peak.
//
// How ops are attributed to units without a hook in the engine: at start-up a one-block model of
// the run's width is walked once, unit by unit, through the ProfilingBackend, giving the ops each
// unit kind issues forward and backward (calibration). During the profiled step the compute ops
// recorded are matched in order against the walk the engine makes (forward 0..U-1, backward
// U-1..0, per micro-step); compute ops that do not fit it (the engine's gradient accumulation) and
// memory ops between two units count as "outside units". If the recorded ops do not contain the
// whole walk, the profile says so and gives per-op totals only. With an engine hook that names
// the unit before each forward_unit/backward_unit call this matching becomes unnecessary.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "runtime/common/diagnostics.h"
#include "runtime/config/config.h"
#include "runtime/model/model_config.h"
#include "runtime/model/unit_layout.h"
#include "runtime/monitor/device_peak.h"
#include "runtime/monitor/profiling_backend.h"

namespace zt {

// The compute ops one unit kind issues (calibration).
struct UnitOps {
  std::vector<OpKind> forward, backward;
};
struct WalkCalibration {
  UnitOps embedding, block, head;
  const UnitOps& of(UnitKind k) const { return k == UnitKind::Embedding ? embedding : k == UnitKind::Block ? block : head; }
};
// Walks a one-block copy of `m` (same width and heads; T <= 32, vocabulary <= 256, one row) on `pb`.
WalkCalibration calibrate_walk(const ModelConfig& m, bool recompute, ProfilingBackend& pb);

struct ProfiledOp {
  OpKind kind = OpKind::Zero;
  std::string shape;
  int calls = 0;          // over the step's micro-steps
  int64_t params = 0;
  double flops = 0, seconds = 0;
  bool recompute = false;  // a forward op re-run in backward (activation checkpointing)
};

struct UnitProfile {
  std::string name;
  int64_t params = 0;
  double forward_flops = 0, backward_flops = 0, recompute_flops = 0, forward_s = 0, backward_s = 0;
  std::vector<ProfiledOp> forward, backward;  // in issue order; backward includes recomputed ops
  double flops() const { return forward_flops + backward_flops + recompute_flops; }
  double seconds() const { return forward_s + backward_s; }
};

struct FlopsProfile {
  int64_t step = 0, profile_step = 0;
  int world_size = 1, micro_batch = 1, grad_accum = 1, seq_len = 1;
  int64_t params = 0;
  bool attributed = false;
  std::string note;                  // why attribution failed, when it did
  std::vector<UnitProfile> units;
  std::vector<ProfiledOp> outside;   // ops outside every unit, grouped by kind
  std::vector<ProfiledOp> by_kind;   // every op of the step, grouped by kind
  double forward_flops = 0, backward_flops = 0, recompute_flops = 0;
  double forward_s = 0, backward_s = 0, outside_s = 0, step_s = 0;
  double gemm_attention_flops = 0;   // counted in matmul and attention ops (recompute excluded)
  double analytic_flops = 0;         // 6Ψ_w + 2Ψ_b per token + causal attention, this step, per rank
  DevicePeak peak;
  double model_flops() const { return forward_flops + backward_flops; }  // recompute excluded
  double hardware_flops() const { return model_flops() + recompute_flops; }
  double mfu() const { return step_s > 0 && peak.flops_per_s > 0 ? model_flops() / step_s / peak.flops_per_s : 0; }
};

// Matches a step's records against the walk (see the header comment). Fills units, outside,
// by_kind and the totals; leaves step, peak and the run's shape to the caller.
FlopsProfile attribute_ops(const std::vector<OpRecord>& records, const WalkCalibration& cal,
                           const std::vector<UnitLayout>& units, int grad_accum);

class FlopsProfiler {
 public:
  // profile_step >= 0 and a step that exists; output_file in a writable folder.
  static void check(const FlopsProfilerConfig& c, int64_t steps, Diagnostics& d);

  // Calibrates the walk and measures the peak (about 0.2 s of GEMMs on the CPU).
  FlopsProfiler(const FlopsProfilerConfig& c, const ModelConfig& m, int micro_batch, int grad_accum, bool recompute,
                int world_size, ProfilingBackend& pb);
  // The 1-based step that is profiled: DeepSpeed profiles when profile_step steps are complete.
  int64_t step_to_profile() const { return profile_step_ + 1; }
  void before_step(int64_t step);
  // The profile when `st` was the profiled step.
  std::optional<FlopsProfile> after_step(int64_t step, double step_seconds);
  // DeepSpeed's print_model_profile layout, limited by module_depth, top_modules and detailed.
  std::string render(const FlopsProfile& p) const;
  nlohmann::json to_json(const FlopsProfile& p) const;
  const std::string& output_file() const { return output_file_; }
  // Model FLOPs of one step per rank (known after the profiled step; the analytic value before).
  double model_flops_per_step() const { return model_flops_; }
  const DevicePeak& peak() const { return peak_; }

 private:
  ProfilingBackend& pb_;
  ModelConfig model_;
  std::vector<UnitLayout> layouts_;
  WalkCalibration cal_;
  DevicePeak peak_;
  int64_t profile_step_ = 1;
  int module_depth_ = -1, top_modules_ = 1;
  bool detailed_ = true;
  std::string output_file_;
  int micro_batch_ = 1, grad_accum_ = 1, world_ = 1;
  bool recompute_ = false;
  double model_flops_ = 0;
};

}  // namespace zt
