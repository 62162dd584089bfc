// 1-bit Adam's phases and update (see onebit_adam.h).
#include "runtime/zero/onebit_adam.h"

namespace zt {

OneBitAdam::Phase OneBitAdam::phase_after(int64_t applied, int64_t freeze_step) {
  if (applied == 0) return Phase::DryRun;
  // DeepSpeed switches at the end of the update whose count reaches freeze_step; the dry run
  // returns before that test, so the earliest switch follows update 2.
  return applied >= 2 && applied >= freeze_step ? Phase::Compressed : Phase::Warmup;
}

OneBitAdam::OneBitAdam(ZeroContext& z, const OptimizerOptions& o, const State& state)
    : CompressedOptimizer(z, o, state, "OneBitAdam"), freeze_step_(o.freeze_step) {}

void OneBitAdam::step(int64_t applied, const Hyper& h, const std::vector<float*>& grads) {
  const Phase phase = phase_after(applied, freeze_step_);
  if (phase == Phase::DryRun) return;
  const bool compress = phase == Phase::Compressed;
  // The moments from the gradients (the variance only in warm-up).
  std::vector<float*> momenta;
  for (const Tensor& t : tensors_) {
    moments(t, grads, h, !compress);
    momenta.push_back(at(s_.m, t));
  }
  if (compress) compressed_mean(momenta);
  for (size_t k = 0; k < tensors_.size(); ++k) {
    if (compress) mask(momenta[k], tensors_[k]);
    adam_update(tensors_[k], float(h.lr), nullptr);
  }
}

}  // namespace zt
