// ShardOptimizer: this rank's fp32 master weights and optimizer moments for every unit, wherever the
// partition puts them (backend memory, host memory apart from it, NVMe records), and the whole
// update of a step from the reduced gradient shards: averaging, the global norm from every rank's
// partial (no gradient leaves the device for it) → the fp16 loss scaler's skip decision →
// clipping folded into one factor → Adam/AdamW, SGD or Lamb over sub-groups of sub_group_size
// elements (the backend's multi-tensor AdamW for device-resident state, the SIMD CPU Adam, SGD or
// Lamb on the host otherwise) → the new working parameters handed to the ParamStore, each unit
// announced as it is done so that the parameter sync can start. It owns the loss scaler and the
// count of applied updates (the scheduler's position).
#pragma once

#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "base/optimizer.h"
#include "offload/aio_uring.h"
#include "offload/nvme_swapper.h"
#include "offload/swap_pipeline.h"
#include "optim/loss_scaler.h"
#include "optim/lr_scheduler.h"
#include "runtime/zero/host_transfer.h"
#include "runtime/zero/compressed_optimizer.h"
#include "runtime/zero/param_store.h"
#include "runtime/zero/reduced_grads.h"
#include "runtime/zero/zero_context.h"

namespace zt {

// What a step's update follows beyond the optimizer's own hyper-parameters.
struct UpdateRules {
  std::shared_ptr<const LrScheduler> scheduler;   // lr and betas per applied step; null: constant
  double gradient_clipping = 0.0;                 // max global norm; 0: off
  LossScalerConfig loss_scaler;                   // dynamic or static loss scaling, when training in fp16
};

// What one step did.
struct StepOutcome {
  double grad_norm = 0;   // global L2 norm of the averaged, unscaled gradients (before clipping)
  double loss_scale = 1;  // the scale the step's backward ran with
  double lr = 0;          // the scheduler's lr for this step (also when it was skipped)
  bool skipped = false;   // non-finite gradients (or the fp16 scaler's overflow): no update
};

// The counters a checkpoint keeps of the update: applied updates, fp16 overflow skips, the scaler.
struct UpdateCounters {
  int64_t applied = 0, skipped = 0;
  std::optional<LossScaler::State> scaler;
};

struct StateOffloadOptions {
  std::string nvme_path;   // offload_optimizer.nvme_path
  int buffer_count = 4;    // offload_optimizer.buffer_count
  offload::AioConfig aio;
};

// One piece of the optimizer's walk: elements [begin, begin + n) of unit `unit`'s state arrays.
// With NVMe offload each sub-group is one record in the swap file: [master n][moment1 n][moment2 n].
struct SubGroup {
  int unit = 0;
  int64_t begin = 0, n = 0;
};

// One fp32 state array per unit (checkpoints): the master weights, the first moment (Adam's exp_avg,
// SGD's momentum_buffer) and the second (exp_avg_sq).
// Moment3: 1-bit LAMB's fresh variance (host memory at stage 0 only).
enum class StateArray { Master, Moment1, Moment2, Moment3 };

class ShardOptimizer {
 public:
  ShardOptimizer(ZeroContext& z, const OptimizerOptions& o, const UpdateRules& rules, int64_t sub_group_size,
                 const StateOffloadOptions& off, offload::PinnedAllocator& pinned, HostTransfer* transfer,
                 ParamStore& store);
  ~ShardOptimizer();

  // Initial master values of unit u (state_len fp32 values) — before finish_initialize.
  void initialize(int u, const float* master_values);
  void finish_initialize();  // NVMe: every record written

  // The scale the next step's loss gradient is multiplied by (1 without a loss scaler).
  double loss_scale() const { return scaler_ ? scaler_->scale() : 1.0; }
  // The lr the next applied update uses.
  double next_lr() const;
  // What the next step moves between the ranks: the engine's exact gradient all-reduce always,
  // except in the compressed optimizers' compressed and local steps, where each rank updates from
  // its own gradient and the optimizer compresses what crosses the ranks.
  StepComm step_comm() const { return compressed_ ? compressed_->comm_after(applied_) : StepComm::Exact; }
  bool exact_gradients() const { return step_comm() == StepComm::Exact; }
  // 1-bit Adam's or 0/1 Adam's phases and per-rank arrays; null for every other optimizer.
  CompressedOptimizer* compressed() { return compressed_.get(); }
  // One step's update from the reduced gradient sums (× mean_factor: the factor that turns the pre-divided
  // rank sum into the mean): the norm, the skip decision, clipping, the update of this rank's shard.
  // `units_done(u)` is called in unit order as soon as units 0..u have their new master and working
  // values (stages 1–2 start gathering them then); not at all when the step is skipped. Collective
  // (the norm's partials). Throws std::runtime_error when a static or minimum loss scale keeps
  // overflowing (DeepSpeed's failure).
  StepOutcome step(const ReducedGrads& grads, float mean_factor, const std::function<void(int)>& units_done);
  UpdateCounters counters() const;
  void restore_counters(const UpdateCounters& c);  // a scaler state is ignored without a scaler

  // Unit u's fp32 master values (its state range, state_len elements) on the host: the master
  // itself where it lives in host memory, else a copy in `scratch` (resized here), so that reading
  // every master holds at most one unit's copy. Between steps only.
  const float* master_on_host(int u, std::vector<float>& scratch);
  // Elements [begin, begin + n) of unit u's state array `a` in state coordinates (element 0 is the
  // unit's state_begin; only [0, state_valid) may be named: padding is not state), copied to or from
  // host memory wherever the state lives — backend memory, host memory, or the NVMe sub-group
  // records (read; for a write, modified and written back). Between steps only.
  bool has_state(StateArray a) const;
  void read_state(StateArray a, int u, int64_t begin, int64_t n, float* out);
  void write_state(StateArray a, int u, int64_t begin, int64_t n, const float* in);
  // The same elements where they live as plain fp32 host memory that may be written in place
  // between steps (a checkpoint load reads into it), or null where they do not: NVMe records and
  // device memory are reached through write_state only. Never a scratch copy.
  float* host_state(StateArray a, int u, int64_t begin, int64_t n);
  uint64_t grad_bytes_to_host() const { return transfer_ ? transfer_->grad_bytes_out() : 0; }

 private:
  // The averaged gradients' squared-norm partial of each rank in partition().norm_ranks(), in rank
  // order, each a sum of per-unit fixed-order sums on the backend; fp32 gradients are averaged in
  // place, 16-bit ones keep the factor (pending_mean_factor_) for the update.
  std::vector<double> prepare_and_norm(const ReducedGrads& grads, float mean_factor);
  // The update proper (after prepare_and_norm): lr, betas, the step number and the folded factor.
  struct StepHyper {
    double lr = 1e-3, beta1 = 0.9, beta2 = 0.999;
    int step = 1;             // 1-based count of applied updates
    float grad_scale = 1.0f;  // unscale (fp16) and clip, folded
  };
  void update(const StepHyper& h, const ReducedGrads& grads, const std::function<void(int)>& units_done);
  bool has_m() const { return optimizer_state_arrays(o_.type, o_.momentum != 0.0) >= 1; }
  bool has_v() const { return o_.type != OptimizerType::SGD; }
  bool has_fresh_v() const { return optimizer_state_arrays(o_.type, false) >= 3; }
  std::vector<float*>& arrays_of(StateArray a) {
    return a == StateArray::Master ? master_ : a == StateArray::Moment1 ? m_ : a == StateArray::Moment2 ? v_ : fresh_v_;
  }
  size_t record_floats(int64_t n) const;
  float* host_array(MemCategory c, int64_t n, bool apart);
  std::vector<float*> host_grads(const ReducedGrads& grads);
  void host_update(int u, int64_t begin, int64_t n, float* p, const float* g, float* m, float* v);
  void lamb_step(const std::vector<float*>& g, const LambHyper& h);  // shard_lamb.cpp
  void check_state_range(StateArray a, int u, int64_t begin, int64_t n) const;
  void access_state(StateArray a, int u, int64_t begin, int64_t n, float* host, bool write);

  ZeroContext& z_;
  OptimizerOptions o_;
  UpdateRules rules_;
  std::unique_ptr<LossScaler> scaler_;  // fp16
  std::unique_ptr<CompressedOptimizer> compressed_;  // OneBitAdam's or ZeroOneAdam's phases and errors
  int64_t applied_ = 0, skipped_ = 0;
  HostTransfer* transfer_;
  ParamStore& store_;
  float pending_mean_factor_ = 1.0f;  // averaging factor still to apply (16-bit gradients)
  std::vector<float*> master_, m_, v_;     // per unit; null when paged to NVMe
  std::vector<float*> fresh_v_;            // per unit: 1-bit LAMB's fresh variance; empty otherwise
  std::vector<float*> grad_host_;          // staged units: fp32 host copy of the reduced gradients
  // Owns the host arrays, each page-aligned and zeroed: a checkpoint's O_DIRECT load lands in
  // them in place instead of through scratch where the tensor's file offset is on the page grid
  // too (a shard file aligns its data area to a page; its tensors follow back to back).
  struct FreeDeleter {
    void operator()(float* p) const { std::free(p); }
  };
  std::vector<std::unique_ptr<float[], FreeDeleter>> store_h_;
  std::vector<SubGroup> subgroups_;
  std::unique_ptr<offload::NvmeSwapper> swapper_;
  std::unique_ptr<offload::SwapPipeline> pipeline_;
  std::vector<std::vector<float>> initial_;  // NVMe: initial masters until finish_initialize
  offload::PinnedBuffer record_;             // NVMe: one sub-group record for read_state/write_state
  AdamWHyper adam_h_;
  SgdHyper sgd_h_;
  StateOffloadOptions off_;
  offload::PinnedAllocator& pinned_;
};

}  // namespace zt
