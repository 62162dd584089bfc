// SGD reference step (PyTorch semantics) over a shard.
#include "optim/sgd.h"

#include <stdexcept>
#include <string>

namespace zt {

void sgd_step(std::span<float> p, std::span<const float> g, std::span<float> buf, const SgdHyper& h) {
  const size_t n = p.size();
  const bool use_momentum = h.momentum != 0.0f;
  if (g.size() != n || (use_momentum && buf.size() != n))
    throw std::invalid_argument("sgd_step: p, g (and the momentum buffer when momentum != 0) must have the same length");
  if (h.nesterov && (h.momentum <= 0.0f || h.dampening != 0.0f))
    throw std::invalid_argument("sgd: nesterov requires momentum > 0 and dampening = 0");
  if (h.step < 1) throw std::invalid_argument("sgd: step must be >= 1 (it is 1-based), got " + std::to_string(h.step));
  const float one_minus_damp = 1.0f - h.dampening;
  const bool first = h.step == 1;
  float* pp = p.data();
  const float* gp = g.data();
  float* bp = buf.data();
  const long long nn = static_cast<long long>(n);
#pragma omp parallel for schedule(static) if (nn > (1 << 16))
  for (long long i = 0; i < nn; ++i) {
    float gi = gp[i] * h.grad_scale;
    if (h.weight_decay != 0.0f) gi = gi + h.weight_decay * pp[i];
    if (use_momentum) {
      const float b = first ? gi : h.momentum * bp[i] + one_minus_damp * gi;
      bp[i] = b;
      gi = h.nesterov ? gi + h.momentum * b : b;
    }
    pp[i] = pp[i] - h.lr * gi;
  }
}

}  // namespace zt
