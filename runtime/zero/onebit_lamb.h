// OneBitLamb: DeepSpeed's 1-bit LAMB (runtime/fp16/onebit/lamb.py) over stage 0's full state, a
// CompressedOptimizer (compressed_optimizer.h) with the phases of 1-bit Adam (OneBitAdam::phase_after):
//   dry run   (the first update): nothing changes but the count;
//   warm-up   (updates 2 .. max(2, freeze_step)): exact gradients, m and v as Adam's, then LAMB's
//             update p −= lr·c·(m / (√v + eps) + wd·p) with c = ‖p‖ / ‖upd‖ clamped to
//             [min_coeff, max_coeff] (1 when either norm is 0); every c ≠ 1 feeds a moving
//             average c_freeze (weight coeff_beta). At update freeze_step the fresh variance
//             v_fresh starts as a copy of v;
//   compressed (afterwards): each rank's m = β1·m + (1−β1)·g, times its tensor's scaling
//             coefficient (the mean over tensors of ‖m‖/√n at the first compressed update, over
//             this tensor's), every tensor in ONE flat compressed call (one scale for the model:
//             hence the coefficients), divided back and masked; the gradient it implies,
//             ĝ = (m − β1·m_prev)/(1−β1), feeds v_fresh; v stays frozen; the factor
//             max((√v + eps)/(√v_fresh + eps)), blended toward 1 by ‖m/(√v+eps)‖/‖upd‖ when
//             weight decay is on, is clamped to [factor_min, factor_max] and to within
//             factor_threshold of the last step's; c = c_freeze · factor.
// No bias correction (DeepSpeed reads and ignores it). Norms are sums of squares in double, rounded
// to fp32 once, as the compressed call's. A tensor whose momentum is all zero at the first
// compressed update gets the coefficient 1 (DeepSpeed divides by its zero norm and raises).
// Differences from DeepSpeed's load, deliberate: the coefficients (c_freeze, the last factor, the
// scaling) and v_fresh are restored at every world size (DeepSpeed resets c_freeze and the factor
// when it loads in warm-up), and each rank's errors at the same one.
#pragma once

#include "runtime/zero/compressed_optimizer.h"

namespace zt {

class OneBitLamb final : public CompressedOptimizer {
 public:
  OneBitLamb(ZeroContext& z, const OptimizerOptions& o, const State& state);

  StepComm comm_after(int64_t applied) const override;
  void step(int64_t applied, const Hyper& h, const std::vector<float*>& grads) override;
  nlohmann::json scalars() const override;
  void restore_scalars(const nlohmann::json& j) override;

  // The last update's per-tensor coefficient c and compressed-phase factor (DeepSpeed's get_lamb_coeffs).
  const std::vector<double>& lamb_coeffs() const { return coeffs_; }
  const std::vector<double>& last_factors() const { return last_factor_; }

 private:
  void warmup(int64_t s, const Hyper& h, const std::vector<float*>& grads);
  void compressed(const Hyper& h, const std::vector<float*>& grads);
  int64_t freeze_step_;
  double max_coeff_, min_coeff_, coeff_beta_, factor_max_, factor_min_, factor_threshold_;
  std::vector<double> coeff_freeze_, last_factor_, scaling_;  // per tensor; scaling_ empty before compression
  std::vector<double> coeffs_;
  std::vector<float> flat_;  // every scaled momentum, tensor after tensor: the one compressed piece
};

}  // namespace zt
