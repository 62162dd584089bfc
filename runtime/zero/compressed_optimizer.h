// CompressedOptimizer: the family of DeepSpeed's communication-compressed optimizers over stage 0's
// full state — 1-bit Adam (onebit_adam.h) and 0/1 Adam (zero_one_adam.h) — and what they share:
// the model's tensors in order; the pieces of the compressed all-reduce
// (collectives/compressed_allreduce.h), each with its error feedback (allocated at the first call,
// on the ledger as optimizer state) — every tensor its own piece for the two Adams, as DeepSpeed's
// call per tensor, all in one call's four collectives; one flat piece of every momentum for 1-bit
// LAMB (onebit_lamb.h), as DeepSpeed's fused buffer —; the momentum mask, and the arrays of this
// rank alone that a checkpoint saves.
// What a step moves (StepComm) is a function of the count of applied updates alone, so a resumed
// run lands in the right phase; the first update is DeepSpeed's dry run in both (the step counts,
// nothing changes: its compressed call of a zero buffer returns zeros, so none is made).
// The mask: signs cannot carry an exact zero, so an element whose momentum is always zero (an
// embedding row no batch uses) would receive ±scale and be divided by √v + eps with v = 0.
// DeepSpeed asks the training script for a mask (exp_avg_mask); zerotrain has no script and derives
// it from the variance: an element whose v is exactly zero keeps a zero momentum (and, in 0/1 Adam,
// a zero accumulated update). A deliberate difference from a DeepSpeed run without a mask.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/optimizer.h"
#include "collectives/compressed_allreduce.h"
#include "runtime/zero/zero_context.h"

namespace zt {

class CompressedOptimizer {
 public:
  // Every unit's full fp32 state on this rank (state_len elements each), as the ShardOptimizer holds it.
  struct State {
    std::vector<float*> master, m, v;
    std::vector<float*> fresh_v;  // 1-bit LAMB's; empty otherwise
  };
  struct Hyper {
    double lr = 1e-3, beta1 = 0.9, beta2 = 0.999;
    float grad_scale = 1.0f;  // unscale and clip, folded (the gradients are this rank's own when not all-reduced)
  };
  // A per-rank fp32 array a checkpoint saves in the rank's own file.
  struct RankArray {
    std::string name;
    int64_t elements = 0;
  };

  virtual ~CompressedOptimizer();

  // What the step after `applied` updates moves between the ranks.
  virtual StepComm comm_after(int64_t applied) const = 0;
  // Whether that step all-reduces its gradients in the engine (DeepSpeed's enable_backward_allreduce).
  bool exact_gradients(int64_t applied) const { return comm_after(applied) == StepComm::Exact; }
  // The update after `applied` updates (this one is number applied + 1) from every unit's gradients
  // (fp32 host, state_len each; a compressed optimizer may overwrite them). Collective where
  // comm_after(applied) is Compressed.
  virtual void step(int64_t applied, const Hyper& h, const std::vector<float*>& grads) = 0;

  // The arrays of this rank alone that a state after `applied` updates holds (none with one rank
  // unless the optimizer keeps some of its own), read and written in the order given.
  virtual std::vector<RankArray> rank_arrays(int64_t applied) const;
  virtual std::vector<RankArray> largest_rank_arrays() const { return rank_arrays(0); }
  virtual void read_array(const std::string& name, float* out) const;
  virtual void write_array(const std::string& name, const float* in);
  // After a load of the state after `applied` updates: `own_arrays` says whether this rank's arrays
  // came back (same world size); if not, the error feedback restarts from zero.
  virtual void after_load(int64_t applied, bool own_arrays);
  // Scalars every rank shares that a checkpoint keeps in its manifest (1-bit LAMB's per-tensor
  // coefficients), and their restore (std::invalid_argument naming what does not fit this model).
  virtual nlohmann::json scalars() const { return nullptr; }
  virtual void restore_scalars(const nlohmann::json& j) { (void)j; }
  // Whether any of the first `applied` updates left this rank anything of its own (a compressed or
  // local step ran): a load that cannot give the arrays back loses something only then.
  bool rank_state_used(int64_t applied) const;

  // The pieces the compressed call sends for a model of these tensor sizes: the sizes themselves, or
  // their sum for 1-bit LAMB.
  static std::vector<int64_t> call_sizes_for(OptimizerType t, const std::vector<int64_t>& tensor_sizes);
  // Extra bytes per rank for a model of these tensor sizes at world size W (the plan's number), and
  // the largest of the per-rank arrays a checkpoint saves (0 for every other optimizer).
  static uint64_t extra_bytes_for(OptimizerType t, const std::vector<int64_t>& tensor_sizes, int world);
  static uint64_t rank_array_bytes_for(OptimizerType t, const std::vector<int64_t>& tensor_sizes, int world);

 protected:
  CompressedOptimizer(ZeroContext& z, const OptimizerOptions& o, const State& state, const char* name);
  struct Tensor {
    int unit;
    int64_t offset, size;
  };
  float* at(const std::vector<float*>& arrays, const Tensor& t) const { return arrays[size_t(t.unit)] + t.offset; }
  // The compressed mean over the ranks of one buffer per piece (each of its piece's size), in one
  // call; the errors allocated on first use. Skipped with one rank (DeepSpeed's size > 1 test).
  void compressed_mean(const std::vector<float*>& buffers);
  void zero_errors();
  // Elements where the variance is zero get a zero value (the mask above).
  void mask(float* x, const Tensor& t) const;
  // m = β1·m + (1−β1)·g and, with `variance`, v = β2·v + (1−β2)·g², g = grads · grad_scale.
  void moments(const Tensor& t, const std::vector<float*>& grads, const Hyper& h, bool variance);
  // The update p −= lr·(m / (√v + eps) + wd·p) of one tensor; with `accumulate`, the same −lr·upd
  // is added to it (0/1 Adam's u).
  void adam_update(const Tensor& t, float lr, float* accumulate);
  // The ledger follows what the optimizer holds (it only grows): the errors and buffer_bytes_.
  void note_held();

  ZeroContext& z_;
  State s_;
  double eps_, weight_decay_;
  std::vector<Tensor> tensors_;
  int64_t elements_ = 0;  // Σ tensor sizes (Ψ)
  std::vector<int64_t> pieces_;  // the compressed call's pieces (call_sizes_for)
  const char* name_;
  uint64_t buffer_bytes_ = 0;  // a member's own buffers beyond the errors

 private:
  int64_t error_elements(bool worker) const;
  void allocate_errors();
  CompressedAllReduce car_;
  std::vector<ErrorFeedback> errors_;
  uint64_t recorded_bytes_ = 0;  // on the ledger (host memory, optimizer state)
};

// The family's member for o.type (OneBitAdam or ZeroOneAdam).
std::unique_ptr<CompressedOptimizer> make_compressed_optimizer(ZeroContext& z, const OptimizerOptions& o,
                                                               const CompressedOptimizer::State& state);

}  // namespace zt
