// 1-bit Adam's phases and update (see onebit_adam.h).
#include "runtime/zero/onebit_adam.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace zt {

OneBitAdam::Phase OneBitAdam::phase_after(int64_t applied, int64_t freeze_step) {
  if (applied == 0) return Phase::DryRun;
  // DeepSpeed switches at the end of the update whose count reaches freeze_step; the dry run
  // returns before that test, so the earliest switch follows update 2.
  return applied >= 2 && applied >= freeze_step ? Phase::Compressed : Phase::Warmup;
}

uint64_t OneBitAdam::error_bytes_for(const std::vector<int64_t>& tensor_sizes, int world) {
  if (world <= 1) return 0;  // one rank never calls the compressed all-reduce
  uint64_t b = 0;
  for (int64_t n : tensor_sizes) {
    const uint64_t pad = CompressedAllReduce::padded_length(size_t(n), world);
    b += (pad + pad / uint64_t(world)) * sizeof(float);
  }
  return b;
}

OneBitAdam::OneBitAdam(ZeroContext& z, const OptimizerOptions& o)
    : z_(z), eps_(o.eps), weight_decay_(o.weight_decay), freeze_step_(o.freeze_step), car_(z.comm) {
  const Partition& p = z.part;
  if (!p.all_reduces_grads())
    throw std::logic_error("OneBitAdam: the optimizer holds the full state of stage 0 only (the config refuses ZeRO stages >= 1)");
  for (int u = 0; u < p.units(); ++u)
    for (const TensorSpec& t : p.map().unit(u).tensors) tensors_.push_back({u, t.offset, t.size});
}

OneBitAdam::~OneBitAdam() = default;

uint64_t OneBitAdam::error_bytes() const {
  uint64_t b = 0;
  for (const ErrorFeedback& e : errors_) b += e.bytes();
  return b;
}

int64_t OneBitAdam::error_elements(ErrorKind k) const {
  const int W = z_.comm.world_size();
  if (W == 1) return 0;
  int64_t n = 0;
  for (const Tensor& t : tensors_) {
    const int64_t pad = int64_t(CompressedAllReduce::padded_length(size_t(t.size), W));
    n += k == ErrorKind::Worker ? pad : pad / W;
  }
  return n;
}

void OneBitAdam::read_errors(ErrorKind k, float* out) const {
  const int W = z_.comm.world_size();
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const size_t pad = CompressedAllReduce::padded_length(size_t(tensors_[i].size), W);
    const size_t n = k == ErrorKind::Worker ? pad : pad / size_t(W);
    if (i < errors_.size() && !errors_[i].worker.empty()) {
      const std::vector<float>& e = k == ErrorKind::Worker ? errors_[i].worker : errors_[i].server;
      std::copy(e.begin(), e.end(), out);
    } else {
      std::fill(out, out + n, 0.0f);
    }
    out += n;
  }
}

void OneBitAdam::write_errors(ErrorKind k, const float* in) {
  if (errors_.size() != tensors_.size()) allocate_errors();
  for (ErrorFeedback& e : errors_) {
    std::vector<float>& v = k == ErrorKind::Worker ? e.worker : e.server;
    std::copy(in, in + v.size(), v.begin());
    in += v.size();
  }
}

void OneBitAdam::allocate_errors() {
  errors_.resize(tensors_.size());
  for (size_t i = 0; i < tensors_.size(); ++i) car_.prepare(errors_[i], size_t(tensors_[i].size));
  const uint64_t now = error_bytes();
  if (now > recorded_bytes_) z_.ledger.record_external(MemCategory::Optimizer, now - recorded_bytes_);
  recorded_bytes_ = std::max(recorded_bytes_, now);
}

void OneBitAdam::step(int64_t applied, const Hyper& h, const std::vector<float*>& master,
                      const std::vector<const float*>& grads, const std::vector<float*>& m, const std::vector<float*>& v) {
  const Phase phase = phase_after(applied, freeze_step_);
  if (phase == Phase::DryRun) return;
  const bool compress = phase == Phase::Compressed;
  const bool communicate = compress && z_.comm.world_size() > 1;
  if (communicate && errors_.size() != tensors_.size()) allocate_errors();
  const float b1 = float(h.beta1), b2 = float(h.beta2), gs = h.grad_scale;
  const float lr = float(h.lr), eps = float(eps_), wd = float(weight_decay_);
  // The moments from the gradients (the variance only in warm-up).
  for (const Tensor& t : tensors_) {
    const size_t u = size_t(t.unit);
    const float* g = grads[u] + t.offset;
    float* mm = m[u] + t.offset;
    float* vv = v[u] + t.offset;
    for (int64_t i = 0; i < t.size; ++i) {
      const float gi = g[i] * gs;
      mm[i] = b1 * mm[i] + (1.0f - b1) * gi;
      if (!compress) vv[i] = b2 * vv[i] + (1.0f - b2) * gi * gi;
    }
  }
  // Compressed: every tensor's momentum in one compressed call (each tensor its own scale and
  // errors, as DeepSpeed's call per tensor, in one call's four collectives), then the mask.
  if (communicate) {
    std::vector<CompressedAllReduce::Tensor> batch;
    for (size_t k = 0; k < tensors_.size(); ++k)
      batch.push_back({m[size_t(tensors_[k].unit)] + tensors_[k].offset, size_t(tensors_[k].size), &errors_[k]});
    car_.run(batch);
  }
  for (const Tensor& t : tensors_) {
    const size_t u = size_t(t.unit);
    float* pp = master[u] + t.offset;
    float* mm = m[u] + t.offset;
    const float* vv = v[u] + t.offset;
    if (compress)  // the momentum mask: an element no gradient reached in warm-up keeps a zero momentum
      for (int64_t i = 0; i < t.size; ++i)
        if (vv[i] == 0.0f) mm[i] = 0.0f;
    for (int64_t i = 0; i < t.size; ++i) {
      float upd = mm[i] / (std::sqrt(vv[i]) + eps);
      if (wd > 0.0f) upd += wd * pp[i];
      pp[i] += -lr * upd;
    }
  }
}

}  // namespace zt
