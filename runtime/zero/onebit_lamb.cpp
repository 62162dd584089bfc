// 1-bit LAMB's phases and update (see onebit_lamb.h).
#include "runtime/zero/onebit_lamb.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "runtime/zero/onebit_adam.h"

namespace zt {

namespace {

// ‖x‖₂ of n fp32 values: a sum of squares in double, rounded to fp32 once.
float norm2(const float* x, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += double(x[i]) * double(x[i]);
  return float(std::sqrt(s));
}

// DeepSpeed's two tests in a row: above hi → hi, then below lo → lo (lo wins if the bounds cross).
double bounded(double x, double lo, double hi) {
  if (x > hi) x = hi;
  if (x < lo) x = lo;
  return x;
}

}  // namespace

OneBitLamb::OneBitLamb(ZeroContext& z, const OptimizerOptions& o, const State& state)
    : CompressedOptimizer(z, o, state, "OneBitLamb"), freeze_step_(o.freeze_step), max_coeff_(o.max_coeff),
      min_coeff_(o.min_coeff), coeff_beta_(o.coeff_beta), factor_max_(o.factor_max), factor_min_(o.factor_min),
      factor_threshold_(o.factor_threshold), coeff_freeze_(tensors_.size(), 0.0), last_factor_(tensors_.size(), 1.0) {
  if (s_.fresh_v.size() != s_.master.size()) throw std::logic_error("OneBitLamb: the fresh variance arrays are missing");
}

StepComm OneBitLamb::comm_after(int64_t applied) const {
  return OneBitAdam::phase_after(applied, freeze_step_) == OneBitAdam::Phase::Compressed ? StepComm::Compressed
                                                                                          : StepComm::Exact;
}

void OneBitLamb::step(int64_t applied, const Hyper& h, const std::vector<float*>& grads) {
  const OneBitAdam::Phase phase = OneBitAdam::phase_after(applied, freeze_step_);
  coeffs_.clear();
  if (phase == OneBitAdam::Phase::DryRun) return;
  if (phase == OneBitAdam::Phase::Warmup) warmup(applied + 1, h, grads);
  else compressed(h, grads);
}

void OneBitLamb::warmup(int64_t s, const Hyper& h, const std::vector<float*>& grads) {
  const float eps = float(eps_), wd = float(weight_decay_);
  for (size_t k = 0; k < tensors_.size(); ++k) {
    const Tensor& t = tensors_[k];
    moments(t, grads, h, true);
    float* pp = at(s_.master, t);
    const float* mm = at(s_.m, t);
    const float* vv = at(s_.v, t);
    if (s == freeze_step_) std::copy_n(vv, t.size, at(s_.fresh_v, t));
    auto update = [&](int64_t i) {
      float u = mm[i] / (std::sqrt(vv[i]) + eps);
      if (wd > 0.0f) u += wd * pp[i];
      return u;
    };
    double sq = 0;
    for (int64_t i = 0; i < t.size; ++i) sq += double(update(i)) * double(update(i));
    const float weight_norm = norm2(pp, t.size), update_norm = float(std::sqrt(sq));
    double c = 1.0;
    if (weight_norm != 0.0f && update_norm != 0.0f) c = bounded(double(weight_norm / update_norm), min_coeff_, max_coeff_);
    if (c != 1.0) coeff_freeze_[k] = coeff_beta_ * coeff_freeze_[k] + (1.0 - coeff_beta_) * c;
    coeffs_.push_back(c);
    const float step = float(-h.lr * c);
    for (int64_t i = 0; i < t.size; ++i) pp[i] += step * update(i);
  }
}

void OneBitLamb::compressed(const Hyper& h, const std::vector<float*>& grads) {
  // The scaling coefficients, once, from the momenta warm-up left.
  if (scaling_.empty()) {
    std::vector<double> scale;
    double sum = 0;
    for (const Tensor& t : tensors_) {
      scale.push_back(double(norm2(at(s_.m, t), t.size) / float(std::sqrt(double(t.size)))));
      sum += scale.back();
    }
    const double united = tensors_.empty() ? 0.0 : sum / double(tensors_.size());
    for (double x : scale) scaling_.push_back(x != 0.0 ? united / x : 1.0);
  }
  if (flat_.empty() && elements_ > 0) {
    flat_.assign(size_t(elements_), 0.0f);
    buffer_bytes_ = uint64_t(elements_) * sizeof(float);
    note_held();
  }
  // This rank's new momenta, scaled, into the one flat piece (m keeps the last step's for ĝ).
  const float b1 = float(h.beta1), b2 = float(h.beta2), c1 = float(1.0 - h.beta1), c2 = float(1.0 - h.beta2);
  const float gs = h.grad_scale;
  float* f = flat_.data();
  for (size_t k = 0; k < tensors_.size(); ++k) {
    const Tensor& t = tensors_[k];
    const float* g = at(grads, t);
    const float* mm = at(s_.m, t);
    const float sc = float(scaling_[k]);
    for (int64_t i = 0; i < t.size; ++i) f[i] = (b1 * mm[i] + c1 * (g[i] * gs)) * sc;
    f += t.size;
  }
  compressed_mean({flat_.data()});
  const float eps = float(eps_), wd = float(weight_decay_);
  f = flat_.data();
  for (size_t k = 0; k < tensors_.size(); ++k) {
    const Tensor& t = tensors_[k];
    float* pp = at(s_.master, t);
    float* mm = at(s_.m, t);
    const float* vv = at(s_.v, t);
    float* fv = at(s_.fresh_v, t);
    const float sc = float(scaling_[k]);
    double update_sq = 0, prelim_sq = 0;
    float factor_max = -INFINITY;
    for (int64_t i = 0; i < t.size; ++i) {
      float mn = f[i] / sc;
      if (vv[i] == 0.0f) mn = 0.0f;  // the mask
      const float gh = (mn - mm[i] * b1) / c1;
      fv[i] = b2 * fv[i] + c2 * gh * gh;
      mm[i] = mn;
      const float denom = std::sqrt(vv[i]) + eps;
      const float prelim = mn / denom;
      const float upd = wd > 0.0f ? prelim + wd * pp[i] : prelim;
      prelim_sq += double(prelim) * double(prelim);
      update_sq += double(upd) * double(upd);
      factor_max = std::max(factor_max, denom / (std::sqrt(fv[i]) + eps));
    }
    f += t.size;
    double factor = double(factor_max);
    if (wd > 0.0f) {
      double ratio = double(float(std::sqrt(prelim_sq)) / float(std::sqrt(update_sq)));
      if (!(ratio < 1.0)) ratio = 1.0;  // Python's min(1.0, x), NaN included
      factor = factor * ratio + (1.0 - ratio);
    }
    factor = bounded(factor, factor_min_, factor_max_);
    factor = std::min(factor, last_factor_[k] * (1.0 + factor_threshold_));
    factor = std::max(factor, last_factor_[k] * (1.0 - factor_threshold_));
    last_factor_[k] = factor;
    const double c = coeff_freeze_[k] * factor;
    coeffs_.push_back(c);
    const float step = float(-h.lr * c);
    for (int64_t i = 0; i < t.size; ++i) {
      const float upd = wd > 0.0f ? mm[i] / (std::sqrt(vv[i]) + eps) + wd * pp[i] : mm[i] / (std::sqrt(vv[i]) + eps);
      pp[i] += step * upd;
    }
  }
}

nlohmann::json OneBitLamb::scalars() const {
  return {{"lamb_coeff_freeze", coeff_freeze_}, {"last_factor", last_factor_}, {"scaling_coeff", scaling_}};
}

void OneBitLamb::restore_scalars(const nlohmann::json& j) {
  const size_t T = tensors_.size();
  auto read = [&](const char* key, bool may_be_empty) {
    if (!j.is_object() || !j.contains(key) || !j.at(key).is_array())
      throw std::invalid_argument(std::string("needs an array \"") + key + "\"");
    const auto& a = j.at(key);
    if (!(a.size() == T || (may_be_empty && a.empty())))
      throw std::invalid_argument(std::string("\"") + key + "\" has " + std::to_string(a.size()) + " values for this model's " +
                                  std::to_string(T) + " tensors");
    std::vector<double> out;
    for (const auto& x : a) {
      if (!x.is_number()) throw std::invalid_argument(std::string("\"") + key + "\" holds a non-number " + x.dump());
      out.push_back(x.get<double>());
    }
    return out;
  };
  std::vector<double> cf = read("lamb_coeff_freeze", false), lf = read("last_factor", false), sc = read("scaling_coeff", true);
  coeff_freeze_ = std::move(cf);
  last_factor_ = std::move(lf);
  scaling_ = std::move(sc);
}

}  // namespace zt
