// 0/1 Adam's counters and update (see zero_one_adam.h).
#include "runtime/zero/zero_one_adam.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace zt {

ZeroOneSchedule::ZeroOneSchedule(const OptimizerOptions& o)
    : var_freeze_step_(o.var_freeze_step), var_update_scaler_(o.var_update_scaler),
      local_step_scaler_(o.local_step_scaler), local_step_clipper_(o.local_step_clipper) {
  if (local_step_clipper_ < 1)  // the config refuses it naming the key; the step number is divided by it
    throw std::invalid_argument("ZeroOneSchedule: local_step_clipper must be >= 1, got " + std::to_string(local_step_clipper_));
}

const ZeroOneSchedule::Counters& ZeroOneSchedule::before(int64_t s) const {
  if (s < at_step_) {  // DeepSpeed's counters start afresh at step 2 (the dry run drops them)
    at_ = Counters{};
    at_step_ = 2;
  }
  for (; at_step_ < s; ++at_step_) {  // the end of step at_step_
    const int64_t t = at_step_;
    if (!frozen(t)) {
      if (t % at_.var_interval == 0 && ++at_.var_counter == var_update_scaler_) {
        at_.var_counter = 0;
        at_.var_interval *= 2;
      }
    } else if (++at_.local_counter == local_step_scaler_) {
      at_.local_counter = 0;
      at_.local_interval = std::min(local_step_clipper_, 2 * at_.local_interval);
    }
  }
  return at_;
}

ZeroOneSchedule::Kind ZeroOneSchedule::kind(int64_t s) const {
  if (s <= 1) return Kind::DryRun;
  const Counters& c = before(s);
  if (!frozen(s)) return s % c.var_interval == 0 ? Kind::Variance : Kind::CompressedGradient;
  return s % c.local_interval == 0 ? Kind::Sync : Kind::Local;
}

ZeroOneAdam::ZeroOneAdam(ZeroContext& z, const OptimizerOptions& o, const State& state)
    : CompressedOptimizer(z, o, state, "ZeroOneAdam"), schedule_(o) {}

StepComm ZeroOneAdam::comm_after(int64_t applied) const {
  switch (schedule_.kind(applied + 1)) {
    case ZeroOneSchedule::Kind::DryRun:
    case ZeroOneSchedule::Kind::Variance: return StepComm::Exact;
    case ZeroOneSchedule::Kind::CompressedGradient:
    case ZeroOneSchedule::Kind::Sync: return StepComm::Compressed;
    case ZeroOneSchedule::Kind::Local: return StepComm::Local;
  }
  return StepComm::Exact;
}

void ZeroOneAdam::ensure_synced() {
  if (!synced_.empty() || elements_ == 0) return;
  synced_.assign(size_t(elements_), 0.0f);
  buffer_bytes_ = uint64_t(elements_) * sizeof(float);
  note_held();
}

void ZeroOneAdam::copy_tensors(const std::vector<float*>& from, float* out) const {
  for (const Tensor& t : tensors_) out = std::copy_n(at(from, t), t.size, out);
}

void ZeroOneAdam::copy_tensors(const float* in, const std::vector<float*>& to) {
  for (const Tensor& t : tensors_) {
    std::copy_n(in, t.size, at(to, t));
    in += t.size;
  }
}

void ZeroOneAdam::step(int64_t applied, const Hyper& h, const std::vector<float*>& grads) {
  using Kind = ZeroOneSchedule::Kind;
  const int64_t s = applied + 1;
  const Kind kind = schedule_.kind(s);
  if (kind == Kind::DryRun) return;
  ensure_synced();
  const float b1 = float(h.beta1), c1 = float(1.0 - h.beta1), gs = h.grad_scale, lr = float(h.lr);
  const bool many = z_.comm.world_size() > 1;
  if (kind == Kind::Variance) {  // exact gradients: both moments
    for (const Tensor& t : tensors_) {
      moments(t, grads, h, true);
      adam_update(t, lr, nullptr);
    }
  } else if (kind == Kind::CompressedGradient) {  // this rank's gradients, compressed: the momentum only
    if (many) {
      std::vector<float*> gbuf;
      for (const Tensor& t : tensors_) {
        float* g = at(grads, t);
        for (int64_t i = 0; i < t.size; ++i) g[i] *= gs;
        gbuf.push_back(g);
      }
      compressed_mean(gbuf);
      for (size_t k = 0; k < tensors_.size(); ++k) {
        const Tensor& t = tensors_[k];
        mask(gbuf[k], t);
        float* mm = at(s_.m, t);
        for (int64_t i = 0; i < t.size; ++i) mm[i] = b1 * mm[i] + c1 * gbuf[k][i];
      }
    }
    for (const Tensor& t : tensors_) adam_update(t, lr, nullptr);
  } else {  // frozen: a local step, then the sync on its steps
    lrs_ += h.lr;
    for (const Tensor& t : tensors_) {
      moments(t, grads, h, false);
      mask(at(s_.m, t), t);
      adam_update(t, lr, nullptr);
    }
    if (kind == Kind::Sync) {
      // The local update, scaled back to momentum units, in place of the parameters.
      const float eps = float(eps_);
      std::vector<float*> ubuf;
      const float* ps = synced_.data();
      for (const Tensor& t : tensors_) {
        float* pp = at(s_.master, t);
        const float* vv = at(s_.v, t);
        for (int64_t i = 0; i < t.size; ++i) pp[i] = (pp[i] - ps[i]) * (std::sqrt(vv[i]) + eps);
        ubuf.push_back(pp);
        ps += t.size;
      }
      compressed_mean(ubuf);
      // m = −u / lrs; with lrs 0 (a schedule at lr 0 since the last sync) that is 0/0 or ±inf in
      // DeepSpeed: here the momentum stays as it is.
      const float lrs = float(lrs_);
      ps = synced_.data();
      for (size_t k = 0; k < tensors_.size(); ++k) {
        const Tensor& t = tensors_[k];
        float* u = ubuf[k];
        mask(u, t);
        float* mm = at(s_.m, t);
        const float* vv = at(s_.v, t);
        for (int64_t i = 0; i < t.size; ++i) {
          if (lrs != 0.0f) mm[i] = -(u[i] / lrs);
          u[i] = ps[i] + u[i] / (std::sqrt(vv[i]) + eps);  // u is the parameter array itself
        }
        ps += t.size;
      }
      lrs_ = 0;
    }
  }
  // The synced point: the parameters when the frozen phase starts and after every sync. The errors
  // are zeroed once at the switch (they were the gradients'; from now on they are the updates').
  const bool switching = !schedule_.frozen(s) && schedule_.frozen(s + 1);
  if (switching) zero_errors();
  if (switching || kind == Kind::Sync) copy_tensors(s_.master, synced_.data());
}

namespace {
constexpr const char* kMaster = "zero_one_master";
constexpr const char* kMomentum = "zero_one_exp_avg";
constexpr const char* kSynced = "zero_one_synced_master";
constexpr const char* kLrs = "zero_one_lrs";  // the double's 8 bytes in 2 elements
}  // namespace

std::vector<CompressedOptimizer::RankArray> ZeroOneAdam::rank_arrays(int64_t applied) const {
  return mid_interval(applied) ? largest_rank_arrays() : CompressedOptimizer::rank_arrays(applied);
}

std::vector<CompressedOptimizer::RankArray> ZeroOneAdam::largest_rank_arrays() const {
  std::vector<RankArray> a = CompressedOptimizer::rank_arrays(0);
  for (const char* n : {kMaster, kMomentum, kSynced}) a.push_back({n, elements_});
  a.push_back({kLrs, 2});
  return a;
}

void ZeroOneAdam::read_array(const std::string& name, float* out) const {
  if (name == kMaster) return copy_tensors(s_.master, out);
  if (name == kMomentum) return copy_tensors(s_.m, out);
  if (name == kSynced) {
    if (synced_.empty()) std::fill_n(out, elements_, 0.0f);
    else std::copy(synced_.begin(), synced_.end(), out);
    return;
  }
  if (name == kLrs) return (void)std::memcpy(out, &lrs_, sizeof lrs_);
  CompressedOptimizer::read_array(name, out);
}

void ZeroOneAdam::write_array(const std::string& name, const float* in) {
  if (name == kMaster) return copy_tensors(in, s_.master);
  if (name == kMomentum) return copy_tensors(in, s_.m);
  if (name == kSynced) {
    ensure_synced();
    std::copy_n(in, elements_, synced_.begin());
    return;
  }
  if (name == kLrs) return (void)std::memcpy(&lrs_, in, sizeof lrs_);
  CompressedOptimizer::write_array(name, in);
}

void ZeroOneAdam::after_load(int64_t applied, bool own_arrays) {
  CompressedOptimizer::after_load(applied, own_arrays);
  if (own_arrays && mid_interval(applied)) return;
  // Synced now: the loaded parameters are the point the next local steps start from.
  lrs_ = 0;
  if (schedule_.frozen(applied + 1)) {
    ensure_synced();
    copy_tensors(s_.master, synced_.data());
  }
}

}  // namespace zt
