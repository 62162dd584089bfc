// Adam / AdamW reference step: host scalars in double, then the shared per-element update.
#include "optim/adam.h"

#include <stdexcept>

namespace zt {

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
