// ZeroOneAdam: DeepSpeed's 0/1 Adam (runtime/fp16/onebit/zoadam.py) over stage 0's full state, a
// CompressedOptimizer (compressed_optimizer.h). Its steps, numbered as DeepSpeed's (the first is
// the dry run), follow counters that are a function of the step number alone (ZeroOneSchedule):
//   variance phase (steps up to var_freeze_step + 1): a step whose number is a multiple of
//     var_interval all-reduces its gradients exactly and updates both moments; every other step
//     compresses the gradients (g ← the compressed all-reduce of this rank's g, masked) and updates
//     the momentum only (with one rank, nothing: DeepSpeed's size > 1 test covers the update too).
//     var_interval doubles after every var_update_scaler variance updates. Each step then
//     p −= lr·(m / (√v + eps) + wd·p).
//   frozen phase (afterwards; the errors are zeroed once at the switch): every step is local — m
//     from this rank's own gradient, the same update, lrs += lr — and a step whose number is a
//     multiple of local_step_interval syncs: the update the local steps made, times √v + eps,
//     crosses the ranks compressed; m = −that / lrs and p = the synced point + that / (√v + eps).
//     local_step_interval doubles every local_step_scaler frozen steps, up to local_step_clipper.
// A deliberate difference from DeepSpeed at the sync: DeepSpeed accumulates the local updates in
// u (Ψ fp32) and undoes them with p − u, which in fp32 leaves each rank a few ulps away from the
// synced point, so the ranks drift apart in the last bits. zerotrain keeps the synced parameters
// instead (the same Ψ fp32), takes the local update as p − p_sync (exactly what the local steps
// moved), and restarts every rank from the same point: the ranks hold bitwise equal parameters
// after every step but the local ones. A load continues DeepSpeed's counters from the step number
// (DeepSpeed's load drops them with the errors, so its intervals restart at 1 after a resume).
// At a sync with lrs = 0 (a schedule at lr 0 since the last sync) the momentum stays (DeepSpeed's
// −u/lrs is 0/0 or ±inf there).
#pragma once

#include "runtime/zero/compressed_optimizer.h"

namespace zt {

// DeepSpeed's 0/1 Adam counters, each a function of the step number (1 = the dry run).
class ZeroOneSchedule {
 public:
  enum class Kind { DryRun, Variance, CompressedGradient, Local, Sync };
  explicit ZeroOneSchedule(const OptimizerOptions& o);
  // What step s does.
  Kind kind(int64_t s) const;
  bool frozen(int64_t s) const { return s >= 3 && s - 1 > var_freeze_step_; }

 private:
  struct Counters {
    int64_t var_interval = 1, var_counter = 0, local_interval = 1, local_counter = 0;
  };
  const Counters& before(int64_t s) const;  // the counters step s starts with (replayed from step 2)
  int64_t var_freeze_step_, var_update_scaler_, local_step_scaler_, local_step_clipper_;
  mutable Counters at_;
  mutable int64_t at_step_ = 2;
};

class ZeroOneAdam final : public CompressedOptimizer {
 public:
  ZeroOneAdam(ZeroContext& z, const OptimizerOptions& o, const State& state);

  StepComm comm_after(int64_t applied) const override;
  void step(int64_t applied, const Hyper& h, const std::vector<float*>& grads) override;
  const ZeroOneSchedule& schedule() const { return schedule_; }

  // Between a local step and the next sync each rank's parameters and momentum are its own: a
  // checkpoint there keeps them, the synced point and lrs (its double's bytes) per rank.
  std::vector<RankArray> rank_arrays(int64_t applied) const override;
  std::vector<RankArray> largest_rank_arrays() const override;
  void read_array(const std::string& name, float* out) const override;
  void write_array(const std::string& name, const float* in) override;
  void after_load(int64_t applied, bool own_arrays) override;

 private:
  bool mid_interval(int64_t applied) const {
    return applied >= 1 && schedule_.kind(applied) == ZeroOneSchedule::Kind::Local;
  }
  void ensure_synced();  // the synced point's buffer, on the ledger
  void copy_tensors(const std::vector<float*>& from, float* out) const;
  void copy_tensors(const float* in, const std::vector<float*>& to);
  ZeroOneSchedule schedule_;
  std::vector<float> synced_;  // the parameters at the last sync (the frozen phase), tensor after tensor
  double lrs_ = 0;             // Σ lr of the local steps since the last sync
};

}  // namespace zt
