// FlopsProfiler: DeepSpeed's flops_profiler for one training step — per unit (embedding, blocks,
// head) and per op the parameters, FLOPs, latency and FLOP/s, and the step's MFU against the peak.
//
// How ops are attributed to units: for the profiled step the caller attaches the profiler's
// recorder to the backend (before_step), and the engine's walk opens a scope per unit and pass
// (kernels/op_record.h), so every op arrives tagged with its unit; ops outside every scope (the
// engine's gradient accumulation, norm, optimizer, copies) count as "outside units". The profiler
// reads records only: it never calls a Backend.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "kernels/op_record.h"
#include "runtime/common/diagnostics.h"
#include "runtime/config/config.h"
#include "runtime/model/model_config.h"
#include "runtime/model/unit_layout.h"
#include "runtime/monitor/device_peak.h"

namespace zt {

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
  bool attributed = false;           // every unit's forward and backward scope seen once per micro-step
  std::string note;                  // which scope was missing, when one was
  std::vector<UnitProfile> units;
  std::vector<ProfiledOp> outside;   // ops outside every unit, grouped by kind
  std::vector<ProfiledOp> by_kind;   // every op of the step, grouped by kind
  double forward_flops = 0, backward_flops = 0, recompute_flops = 0;
  double forward_s = 0, backward_s = 0, outside_s = 0, step_s = 0;
  double gemm_attention_flops = 0;   // counted in matmul and attention ops (recompute excluded)
  double analytic_flops = 0;         // analytic_training_flops: 6Ψ_w (+ 2Ψ_b) per token + causal attention, this step, per rank
  DevicePeak peak;
  double model_flops() const { return forward_flops + backward_flops; }  // recompute excluded
  double hardware_flops() const { return model_flops() + recompute_flops; }
  double mfu() const { return step_s > 0 && peak.flops_per_s > 0 ? model_flops() / step_s / peak.flops_per_s : 0; }
};

// A step's records grouped by the scope each op ran in. Fills units, outside, by_kind and the
// totals; leaves step, peak and the run's shape to the caller.
FlopsProfile attribute_ops(const OpRecorder& recorded, const std::vector<UnitLayout>& units, int grad_accum);

// The closed-form GEMM + attention FLOPs of one step over `sequences` sequences of model m, by its
// family (gpt2_training_flops or llama_training_flops, kernels/op_flops.h), without recompute.
Gpt2Flops analytic_training_flops(const ModelConfig& m, int64_t sequences);

class FlopsProfiler {
 public:
  // profile_step >= 0 and a step that exists; output_file in a writable folder.
  static void check(const FlopsProfilerConfig& c, int64_t steps, Diagnostics& d);

  // `peak`: device_peak() of the backend the run trains on (measured by the caller).
  FlopsProfiler(const FlopsProfilerConfig& c, const ModelConfig& m, int micro_batch, int grad_accum, int world_size,
                DevicePeak peak);
  // The 1-based step that is profiled: DeepSpeed profiles when profile_step steps are complete.
  int64_t step_to_profile() const { return profile_step_ + 1; }
  // The recorder to attach to the backend for `step` (Backend::attach_op_recorder), emptied: this
  // profiler's own when `step` is the profiled one, null otherwise. Detach it after the step.
  OpRecorder* before_step(int64_t step);
  // The profile when `step` was the profiled one (read from the recorder).
  std::optional<FlopsProfile> after_step(int64_t step, double step_seconds);
  // DeepSpeed's print_model_profile layout, limited by module_depth, top_modules and detailed.
  std::string render(const FlopsProfile& p) const;
  nlohmann::json to_json(const FlopsProfile& p) const;
  const std::string& output_file() const { return output_file_; }
  // Model FLOPs of one step per rank (known after the profiled step; the analytic value before).
  double model_flops_per_step() const { return model_flops_; }
  const DevicePeak& peak() const { return peak_; }

 private:
  ModelConfig model_;
  std::vector<UnitLayout> layouts_;
  DevicePeak peak_;
  OpRecorder recorder_;
  bool recording_ = false;  // before_step handed out the recorder for the profiled step
  int64_t profile_step_ = 1;
  int module_depth_ = -1, top_modules_ = 1;
  bool detailed_ = true;
  std::string output_file_;
  int micro_batch_ = 1, grad_accum_ = 1, world_ = 1;
  double model_flops_ = 0;
};

}  // namespace zt
