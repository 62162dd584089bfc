// Adam / AdamW reference step: host scalars in double, then the shared per-element update.
#include "optim/adam.h"

#include <stdexcept>

namespace zt {

AdamScalars adam_scalars(const AdamWHyper& h) {
  if (h.step < 1) throw std::invalid_argument("adam: step must be >= 1 (it is 1-based), got " + std::to_string(h.step));
  const double b1 = h.beta1, b2 = h.beta2, lr = h.lr, wd = h.weight_decay;
  double bc1 = 1.0, bc2 = 1.0;
  if (h.bias_correction) {
    bc1 = 1.0 - std::pow(b1, h.step);
    bc2 = 1.0 - std::pow(b2, h.step);
  }
  AdamScalars s{};
  s.beta1 = h.beta1;
  s.beta2 = h.beta2;
  s.one_minus_b1 = static_cast<float>(1.0 - b1);
  s.one_minus_b2 = static_cast<float>(1.0 - b2);
  s.eps = h.eps;
  s.step_size = h.bias_correction ? static_cast<float>(lr / bc1) : h.lr;
  s.inv_sqrt_bc2 = h.bias_correction ? static_cast<float>(1.0 / std::sqrt(bc2)) : 1.0f;
  s.decay = h.decoupled ? static_cast<float>(1.0 - lr * wd) : 1.0f;
  s.l2 = (!h.decoupled && h.weight_decay != 0.0f) ? h.weight_decay : 0.0f;
  s.grad_scale = h.grad_scale;
  return s;
}

void adam_step(std::span<float> p, std::span<const float> g, std::span<float> m, std::span<float> v,
               const AdamWHyper& h) {
  const size_t n = p.size();
  if (g.size() != n || m.size() != n || v.size() != n)
    throw std::invalid_argument("adam_step: p, g, m, v must have the same length");
  const AdamScalars s = adam_scalars(h);
  float* pp = p.data();
  const float* gp = g.data();
  float* mp = m.data();
  float* vp = v.data();
  const long long nn = static_cast<long long>(n);
#pragma omp parallel for schedule(static) if (nn > (1 << 16))
  for (long long i = 0; i < nn; ++i) adam_update_element(pp[i], gp[i], mp[i], vp[i], s);
}

}  // namespace zt
