// The optimizer kinds and the per-step hyper-parameters every implementation of them takes (the
// host reference in optim/, the SIMD CPU Adam in offload/, the fused GPU AdamW in kernels/cuda/).
#pragma once

#include <cstdint>

namespace zt {

// AdamW: decoupled weight decay; AdamL2: weight decay added to the gradient (DeepSpeed's
// adam_w_mode = false); SGD with optional momentum / Nesterov; Lamb with a per-tensor trust ratio;
// OneBitAdam: DeepSpeed's 1-bit Adam (stage 0; its momentum crosses the ranks compressed to signs);
// ZeroOneAdam: DeepSpeed's 0/1 Adam (stage 0; gradients, then accumulated updates, compressed to signs,
// the variance updated at growing intervals and, once frozen, local steps between syncs);
// OneBitLamb: DeepSpeed's 1-bit LAMB (stage 0; every momentum in one compressed call, the trust
// ratio frozen and rescaled by a fresh variance).
enum class OptimizerType { AdamW, AdamL2, SGD, Lamb, OneBitAdam, ZeroOneAdam, OneBitLamb };

constexpr const char* optimizer_type_name(OptimizerType t) {
  switch (t) {
    case OptimizerType::AdamW: return "AdamW";
    case OptimizerType::AdamL2: return "Adam (L2)";
    case OptimizerType::SGD: return "SGD";
    case OptimizerType::Lamb: return "Lamb";
    case OptimizerType::OneBitAdam: return "OneBitAdam";
    case OptimizerType::ZeroOneAdam: return "ZeroOneAdam";
    case OptimizerType::OneBitLamb: return "OneBitLamb";
  }
  return "?";
}

constexpr bool is_adam(OptimizerType t) { return t == OptimizerType::AdamW || t == OptimizerType::AdamL2; }
// DeepSpeed's communication-compressed optimizers (runtime/zero/compressed_optimizer.h): stage 0 only,
// on host buffers, their traffic the compressed all-reduce's.
constexpr bool is_compressed(OptimizerType t) {
  return t == OptimizerType::OneBitAdam || t == OptimizerType::ZeroOneAdam || t == OptimizerType::OneBitLamb;
}

// What one step of a compressed optimizer moves between the ranks: the engine's exact gradient
// all-reduce, no all-reduce but one compressed call over every tensor, or neither (0/1 Adam's local
// steps). Every other optimizer's steps are Exact.
enum class StepComm { Exact, Compressed, Local };

// fp32 state arrays per parameter besides the master copy: Adam and Lamb keep two moments, 1-bit
// LAMB a fresh variance besides, SGD one momentum buffer when momentum != 0, none otherwise.
constexpr int optimizer_state_arrays(OptimizerType t, bool sgd_momentum) {
  return t == OptimizerType::SGD ? (sgd_momentum ? 1 : 0) : t == OptimizerType::OneBitLamb ? 3 : 2;
}

// The optimizer block of a config, as the engine uses it.
struct OptimizerOptions {
  OptimizerType type = OptimizerType::AdamW;
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double weight_decay = 0.0;  // applied to every parameter, as DeepSpeed's config-built optimizers do
  bool bias_correction = true;
  double momentum = 0.0, dampening = 0.0;  // SGD
  bool nesterov = false;                   // SGD
  double max_coeff = 10.0, min_coeff = 0.01;  // Lamb, OneBitLamb
  int64_t freeze_step = 100000;               // OneBitAdam, OneBitLamb: applied updates before compression
  // OneBitLamb (DeepSpeed's names and defaults): the warm-up trust ratios' moving average weight,
  // and the bounds of the compressed phase's factor (absolute, and relative to the last step's).
  double coeff_beta = 0.9, factor_max = 4.0, factor_min = 0.5, factor_threshold = 0.1;
  // ZeroOneAdam (DeepSpeed's names and defaults): the variance is updated every var_interval steps,
  // the interval doubling after each var_update_scaler updates, until var_freeze_step; then local
  // steps, synced every local_step_interval steps, which doubles every local_step_scaler steps up
  // to local_step_clipper.
  int64_t var_freeze_step = 100000, var_update_scaler = 16;
  int64_t local_step_scaler = 32678, local_step_clipper = 16;
};

struct AdamWHyper {
  float lr = 1e-3f;
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
  float weight_decay = 0.0f;
  bool decoupled = true;     // true: AdamW (decay applied to the param); false: L2 added to the grad
  int step = 1;              // 1-based step for bias correction
  bool bias_correction = true;
  float grad_scale = 1.0f;   // multiplied into every grad before use (unscale, clip and average, folded)
};

struct SgdHyper {
  float lr = 1e-3f;
  float momentum = 0.0f;
  float dampening = 0.0f;
  float weight_decay = 0.0f;
  bool nesterov = false;    // requires momentum > 0 and dampening == 0 (as PyTorch)
  int step = 1;             // 1-based; on step 1 the momentum buffer is initialised to the gradient
  float grad_scale = 1.0f;  // multiplied into every grad before use (unscale and clip, folded)
};

struct LambHyper {
  float lr = 1e-3f;
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
  float weight_decay = 0.0f;
  bool bias_correction = true;
  float max_coeff = 10.0f, min_coeff = 0.01f;  // the trust ratio is clamped to [min_coeff, max_coeff]
  int step = 1;                                // 1-based
  float grad_scale = 1.0f;                     // multiplied into every grad (unscale and clip, folded)
};

}  // namespace zt
