// OneBitAdam: DeepSpeed's 1-bit Adam (runtime/fp16/onebit/adam.py) over stage 0's full state, its
// phases a function of the count of applied updates (so a resumed run lands in the right one):
//   dry run   (the first update): DeepSpeed's initialisation step. Nothing changes — neither the
//             parameters nor the moments (its compressed call of a zero momentum returns zeros, so
//             none is made) — but the step counts, as DeepSpeed's does;
//   warm-up   (updates 2 .. max(2, freeze_step)): the gradients are all-reduced exactly and
//             m = β1·m + (1−β1)·g, v = β2·v + (1−β2)·g², p −= lr·(m / (√v + eps) + wd·p);
//   compressed (afterwards): the engine's gradient all-reduce is off, m = β1·m + (1−β1)·g from this
//             rank's own gradient, then m ← the compressed all-reduce of m, each parameter tensor
//             with its own scale and errors as DeepSpeed's call per tensor, all of them in one
//             call's four collectives (bit for bit the calls one by one; DeepSpeed's 4 messages per
//             tensor made a step of `small` 2.4x slower than AdamW's on a 1 Gbit/s link), and the
//             same update with v frozen. With one rank the call is skipped (DeepSpeed's size > 1 test).
// Signs cannot carry an exact zero, so an element whose momentum is always zero (an embedding row no
// batch uses) would receive ±scale every step, divided by √v + eps with v = 0: DeepSpeed asks the
// training script for a mask (exp_avg_mask) that zeroes such momenta after each compressed call.
// zerotrain has no script; it derives the mask from the frozen variance instead: an element whose
// v is exactly zero (no warm-up gradient reached it) keeps a zero momentum. A deliberate difference
// from a DeepSpeed run without a mask, where such elements drift.
// DeepSpeed never applies bias correction here (bias_correction is read and ignored) and adds the
// weight decay to the update (decoupled, scaled by lr). Each tensor's error feedback (worker n_pad +
// server n_pad/W fp32) is allocated at the first compressed update, on the ledger as optimizer state.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/optimizer.h"
#include "collectives/compressed_allreduce.h"
#include "runtime/zero/zero_context.h"

namespace zt {

class OneBitAdam {
 public:
  enum class Phase { DryRun, Warmup, Compressed };
  // The phase of the update that follows `applied` applied updates.
  static Phase phase_after(int64_t applied, int64_t freeze_step);
  // The error-feedback bytes of one rank for a model of these tensor sizes at world size W (0 at W = 1).
  static uint64_t error_bytes_for(const std::vector<int64_t>& tensor_sizes, int world);

  OneBitAdam(ZeroContext& z, const OptimizerOptions& o);
  ~OneBitAdam();

  // Whether the step after `applied` updates all-reduces its gradients (DeepSpeed's
  // enable_backward_allreduce): the dry run and warm-up do, the compressed phase does not.
  bool exact_gradients(int64_t applied) const { return phase_after(applied, freeze_step_) != Phase::Compressed; }
  int64_t freeze_step() const { return freeze_step_; }

  struct Hyper {
    double lr = 1e-3, beta1 = 0.9, beta2 = 0.999;
    float grad_scale = 1.0f;  // unscale and clip, folded (the gradients are this rank's own when compressing)
  };
  // The update after `applied` updates (this one is number applied + 1) over every unit's full
  // state: master, m, v (fp32 host, state_len each) and the gradients. Collective in the compressed phase.
  void step(int64_t applied, const Hyper& h, const std::vector<float*>& master, const std::vector<const float*>& grads,
            const std::vector<float*>& m, const std::vector<float*>& v);

  // The error feedback of every tensor, concatenated in model order, for a checkpoint: the worker
  // errors (Σ n_pad elements) and the server errors (Σ n_pad / W). None with one rank (no call is
  // ever made). Zeros before the first compressed update; writing allocates them.
  enum class ErrorKind { Worker, Server };
  int64_t error_elements(ErrorKind k) const;
  void read_errors(ErrorKind k, float* out) const;
  void write_errors(ErrorKind k, const float* in);

 private:
  void allocate_errors();
  uint64_t error_bytes() const;  // held now
  ZeroContext& z_;
  double eps_, weight_decay_;
  int64_t freeze_step_;
  CompressedAllReduce car_;
  struct Tensor {
    int unit;
    int64_t offset, size;
  };
  std::vector<Tensor> tensors_;
  std::vector<ErrorFeedback> errors_;
  uint64_t recorded_bytes_ = 0;  // on the ledger (host memory, optimizer state)
};

}  // namespace zt
