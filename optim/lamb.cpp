// Lamb reference implementation: the two phases, the trust ratio, and the single-process driver.
#include "optim/lamb.h"

#include <cmath>
#include <map>
#include <stdexcept>
#include <string>

namespace zt {

namespace {

struct LambScalars {
  float beta1, beta2, one_minus_b1, one_minus_b2, eps, wd, grad_scale, step_size;
};

LambScalars lamb_scalars(const LambHyper& h) {
  if (h.step < 1) throw std::invalid_argument("lamb: step must be >= 1 (it is 1-based), got " + std::to_string(h.step));
  double bc1 = 1.0, bc2 = 1.0;
  if (h.bias_correction) {
    bc1 = 1.0 - std::pow(static_cast<double>(h.beta1), h.step);
    bc2 = 1.0 - std::pow(static_cast<double>(h.beta2), h.step);
  }
  const double b1 = h.beta1, b2 = h.beta2;
  return {h.beta1,
          h.beta2,
          static_cast<float>(1.0 - b1),
          static_cast<float>(1.0 - b2),
          h.eps,
          h.weight_decay,
          h.grad_scale,
          static_cast<float>(static_cast<double>(h.lr) * std::sqrt(bc2) / bc1)};
}

inline float lamb_update(float p, float m, float v, const LambScalars& s) {
  return m / (sqrtf(v) + s.eps) + s.wd * p;
}

void check_pieces(size_t n, std::span<const LambPiece> pieces, size_t out_size, const char* what) {
  if (out_size != pieces.size())
    throw std::invalid_argument(std::string("lamb: ") + what + " must have one entry per piece");
  for (const auto& pc : pieces)
    if (pc.offset > n || pc.count > n - pc.offset)
      throw std::invalid_argument("lamb: piece [" + std::to_string(pc.offset) + ", +" + std::to_string(pc.count) +
                                  ") lies outside the shard of " + std::to_string(n) + " elements");
}

}  // namespace

void lamb_phase1(std::span<const float> p, std::span<const float> g, std::span<float> m, std::span<float> v,
                 std::span<const LambPiece> pieces, const LambHyper& h, std::span<LambPartial> partials) {
  const size_t n = p.size();
  if (g.size() != n || m.size() != n || v.size() != n)
    throw std::invalid_argument("lamb_phase1: p, g, m, v must have the same length");
  check_pieces(n, pieces, partials.size(), "partials");
  const LambScalars s = lamb_scalars(h);
  const long long np = static_cast<long long>(pieces.size());
  // Pieces run in parallel; inside a piece the sums run in index order, so the result does not
  // depend on the thread count.
#pragma omp parallel for schedule(dynamic, 1) if (n > (1u << 16))
  for (long long k = 0; k < np; ++k) {
    const LambPiece pc = pieces[k];
    double w_sq = 0.0, u_sq = 0.0;
    for (size_t i = pc.offset; i < pc.offset + pc.count; ++i) {
      const float gs = g[i] * s.grad_scale;
      const float mi = s.beta1 * m[i] + s.one_minus_b1 * gs;
      const float vi = s.beta2 * v[i] + s.one_minus_b2 * (gs * gs);
      m[i] = mi;
      v[i] = vi;
      const float u = lamb_update(p[i], mi, vi, s);
      w_sq += static_cast<double>(p[i]) * static_cast<double>(p[i]);
      u_sq += static_cast<double>(u) * static_cast<double>(u);
    }
    partials[k] = {w_sq, u_sq};
  }
}

float lamb_trust_ratio(double w_sq, double u_sq, const LambHyper& h) {
  const double w = std::sqrt(w_sq), u = std::sqrt(u_sq);
  if (w == 0.0 || u == 0.0) return 1.0f;
  double r = w / u;
  if (r > h.max_coeff) r = h.max_coeff;
  if (r < h.min_coeff) r = h.min_coeff;
  return static_cast<float>(r);
}

void lamb_phase2(std::span<float> p, std::span<const float> m, std::span<const float> v,
                 std::span<const LambPiece> pieces, const LambHyper& h, std::span<const float> ratios) {
  const size_t n = p.size();
  if (m.size() != n || v.size() != n) throw std::invalid_argument("lamb_phase2: p, m, v must have the same length");
  check_pieces(n, pieces, ratios.size(), "ratios");
  const LambScalars s = lamb_scalars(h);
  const long long np = static_cast<long long>(pieces.size());
#pragma omp parallel for schedule(dynamic, 1) if (n > (1u << 16))
  for (long long k = 0; k < np; ++k) {
    const LambPiece pc = pieces[k];
    const float coeff = s.step_size * ratios[k];
    for (size_t i = pc.offset; i < pc.offset + pc.count; ++i) p[i] = p[i] - coeff * lamb_update(p[i], m[i], v[i], s);
  }
}

std::vector<float> lamb_step(std::span<float> p, std::span<const float> g, std::span<float> m, std::span<float> v,
                             std::span<const LambPiece> pieces, const LambHyper& h) {
  std::vector<LambPartial> partials(pieces.size());
  lamb_phase1(p, g, m, v, pieces, h, partials);
  std::map<int64_t, LambPartial> per_tensor;
  for (size_t k = 0; k < pieces.size(); ++k) {
    auto& t = per_tensor[pieces[k].tensor];
    t.w_sq += partials[k].w_sq;
    t.u_sq += partials[k].u_sq;
  }
  std::vector<float> ratios(pieces.size());
  for (size_t k = 0; k < pieces.size(); ++k) {
    const auto& t = per_tensor[pieces[k].tensor];
    ratios[k] = lamb_trust_ratio(t.w_sq, t.u_sq, h);
  }
  lamb_phase2(p, m, v, pieces, h, ratios);
  return ratios;
}

}  // namespace zt
