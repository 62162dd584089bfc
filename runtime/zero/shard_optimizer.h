// ShardOptimizer: this rank's fp32 master weights and optimizer moments for every unit, wherever the
// partition puts them (backend memory, host memory apart from it, NVMe records), and the update of
// that shard: the global norm's partials from the reduced gradients (no gradient leaves the device
// for them), then Adam/AdamW, SGD or Lamb over sub-groups of sub_group_size elements — the
// backend's multi-tensor AdamW for device-resident state, the SIMD CPU Adam (or SGD, Lamb) on the
// host otherwise — and the new working parameters handed to the ParamStore.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "base/optimizer.h"
#include "offload/aio_uring.h"
#include "offload/nvme_swapper.h"
#include "offload/swap_pipeline.h"
#include "runtime/zero/grad_reducer.h"
#include "runtime/zero/host_transfer.h"
#include "runtime/zero/param_store.h"
#include "runtime/zero/zero_context.h"

namespace zt {

// The hyper-parameters of one step (the scheduler's lr and betas, the combined unscale/clip factor).
struct StepHyper {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999;
  int step = 1;              // 1-based count of applied updates
  float grad_scale = 1.0f;   // unscale (fp16) and clip, folded
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

class ShardOptimizer {
 public:
  ShardOptimizer(ZeroContext& z, const OptimizerOptions& o, int64_t sub_group_size, const StateOffloadOptions& off,
                 offload::PinnedAllocator& pinned, HostTransfer* transfer, ParamStore& store);
  ~ShardOptimizer();

  // Initial master values of unit u (state_len fp32 values) — before finish_initialize.
  void initialize(int u, const float* master_values);
  void finish_initialize();  // NVMe: every record written

  // The reduced gradients become averages (× post, the factor that turns the pre-divided rank sum
  // into the mean): fp32 gradients are scaled in place; 16-bit ones keep it as a factor. Returns the
  // squared-norm partial of each rank in partition().norm_ranks(), in rank order, of the averaged
  // (still loss-scaled) gradients, each a sum of per-unit fixed-order sums on the backend.
  std::vector<double> prepare_and_norm(const GradReducer& grads, float post);
  // The update (after prepare_and_norm). `units_done(u)` is called in unit order as soon as units
  // 0..u have their new master and working values (stages 1–2 start gathering them then).
  void step(const StepHyper& h, const GradReducer& grads, const std::function<void(int)>& units_done);

  // Every unit's fp32 master values (its state range, state_len each), on the host.
  std::vector<std::vector<float>> masters();
  const std::vector<SubGroup>& subgroups() const { return subgroups_; }
  uint64_t grad_bytes_to_host() const { return transfer_ ? transfer_->grad_bytes_out() : 0; }

 private:
  bool has_m() const { return optimizer_state_arrays(o_.type, o_.momentum != 0.0) >= 1; }
  bool has_v() const { return o_.type != OptimizerType::SGD; }
  size_t record_floats(int64_t n) const;
  float* host_array(MemCategory c, int64_t n, bool apart);
  std::vector<float*> host_grads(const GradReducer& grads);
  void host_update(int u, int64_t begin, int64_t n, float* p, const float* g, float* m, float* v);
  void lamb_step(const std::vector<float*>& g, const LambHyper& h);  // shard_lamb.cpp

  ZeroContext& z_;
  OptimizerOptions o_;
  HostTransfer* transfer_;
  ParamStore& store_;
  float post_ = 1.0f;  // averaging factor still to apply (16-bit gradients)
  std::vector<float*> master_, m_, v_;     // per unit; null when paged to NVMe
  std::vector<float*> grad_host_;          // staged units: fp32 host copy of the reduced gradients
  std::vector<std::vector<float>> store_h_;  // owns the host arrays
  std::vector<SubGroup> subgroups_;
  std::unique_ptr<offload::NvmeSwapper> swapper_;
  std::unique_ptr<offload::SwapPipeline> pipeline_;
  std::vector<std::vector<float>> initial_;  // NVMe: initial masters until finish_initialize
  AdamWHyper adam_h_;
  SgdHyper sgd_h_;
  StateOffloadOptions off_;
  offload::PinnedAllocator& pinned_;
};

}  // namespace zt
