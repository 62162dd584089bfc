// The compressed optimizers' shared parts (see compressed_optimizer.h).
#include "runtime/zero/compressed_optimizer.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "runtime/zero/onebit_adam.h"
#include "runtime/zero/onebit_lamb.h"
#include "runtime/zero/zero_one_adam.h"

namespace zt {

namespace {
constexpr const char* kWorkerErrors = "onebit_worker_error";
constexpr const char* kServerErrors = "onebit_server_error";
}  // namespace

CompressedOptimizer::CompressedOptimizer(ZeroContext& z, const OptimizerOptions& o, const State& state, const char* name)
    : z_(z), s_(state), eps_(o.eps), weight_decay_(o.weight_decay), name_(name), car_(z.comm) {
  const Partition& p = z.part;
  if (!p.all_reduces_grads())
    throw std::logic_error(std::string(name) + ": the optimizer holds the full state of stage 0 only (the config refuses "
                           "ZeRO stages >= 1)");
  for (int u = 0; u < p.units(); ++u)
    for (const TensorSpec& t : p.map().unit(u).tensors) {
      tensors_.push_back({u, t.offset, t.size});
      elements_ += t.size;
    }
  std::vector<int64_t> sizes;
  for (const Tensor& t : tensors_) sizes.push_back(t.size);
  pieces_ = call_sizes_for(o.type, sizes);
}

std::vector<int64_t> CompressedOptimizer::call_sizes_for(OptimizerType t, const std::vector<int64_t>& tensor_sizes) {
  if (t != OptimizerType::OneBitLamb) return tensor_sizes;
  int64_t total = 0;
  for (int64_t n : tensor_sizes) total += n;
  return {total};
}

CompressedOptimizer::~CompressedOptimizer() = default;

uint64_t CompressedOptimizer::extra_bytes_for(OptimizerType t, const std::vector<int64_t>& tensor_sizes, int world) {
  if (!is_compressed(t)) return 0;
  uint64_t b = 0;
  if (world > 1)  // one rank never calls the compressed all-reduce
    for (int64_t n : call_sizes_for(t, tensor_sizes)) {
      const uint64_t pad = CompressedAllReduce::padded_length(size_t(n), world);
      b += (pad + pad / uint64_t(world)) * sizeof(float);
    }
  // 0/1 Adam's synced point and 1-bit LAMB's flat momentum buffer, at any world size
  if (t == OptimizerType::ZeroOneAdam || t == OptimizerType::OneBitLamb)
    for (int64_t n : tensor_sizes) b += uint64_t(n) * sizeof(float);
  return b;
}

uint64_t CompressedOptimizer::rank_array_bytes_for(OptimizerType t, const std::vector<int64_t>& tensor_sizes, int world) {
  if (!is_compressed(t)) return 0;
  uint64_t b = 0;  // the errors
  if (world > 1)
    for (int64_t n : call_sizes_for(t, tensor_sizes)) {
      const uint64_t pad = CompressedAllReduce::padded_length(size_t(n), world);
      b += (pad + pad / uint64_t(world)) * sizeof(float);
    }
  if (t == OptimizerType::ZeroOneAdam) {  // its own master, momentum and synced point, and lrs
    for (int64_t n : tensor_sizes) b += 3 * uint64_t(n) * sizeof(float);
    b += 8;
  }
  return b;
}

int64_t CompressedOptimizer::error_elements(bool worker) const {
  const int W = z_.comm.world_size();
  if (W == 1) return 0;
  int64_t n = 0;
  for (int64_t size : pieces_) {
    const int64_t pad = int64_t(CompressedAllReduce::padded_length(size_t(size), W));
    n += worker ? pad : pad / W;
  }
  return n;
}

std::vector<CompressedOptimizer::RankArray> CompressedOptimizer::rank_arrays(int64_t applied) const {
  (void)applied;
  if (z_.comm.world_size() == 1) return {};
  return {{kWorkerErrors, error_elements(true)}, {kServerErrors, error_elements(false)}};
}

void CompressedOptimizer::read_array(const std::string& name, float* out) const {
  if (name != kWorkerErrors && name != kServerErrors)
    throw std::logic_error(std::string(name_) + ": no per-rank array " + name);
  const bool worker = name == kWorkerErrors;
  const int W = z_.comm.world_size();
  for (size_t i = 0; i < pieces_.size(); ++i) {
    const size_t pad = CompressedAllReduce::padded_length(size_t(pieces_[i]), W);
    const size_t n = worker ? pad : pad / size_t(W);
    if (i < errors_.size() && !errors_[i].worker.empty()) {
      const std::vector<float>& e = worker ? errors_[i].worker : errors_[i].server;
      std::copy(e.begin(), e.end(), out);
    } else {
      std::fill(out, out + n, 0.0f);  // zeros before the first compressed call
    }
    out += n;
  }
}

void CompressedOptimizer::write_array(const std::string& name, const float* in) {
  if (name != kWorkerErrors && name != kServerErrors)
    throw std::logic_error(std::string(name_) + ": no per-rank array " + name);
  if (errors_.size() != pieces_.size()) allocate_errors();
  for (ErrorFeedback& e : errors_) {
    std::vector<float>& v = name == kWorkerErrors ? e.worker : e.server;
    std::copy(in, in + v.size(), v.begin());
    in += v.size();
  }
}

void CompressedOptimizer::after_load(int64_t applied, bool own_arrays) {
  (void)applied;
  if (!own_arrays) zero_errors();
}

bool CompressedOptimizer::rank_state_used(int64_t applied) const {
  for (int64_t k = 0; k < applied; ++k)
    if (comm_after(k) != StepComm::Exact) return true;
  return false;
}

void CompressedOptimizer::note_held() {
  uint64_t now = buffer_bytes_;
  for (const ErrorFeedback& e : errors_) now += e.bytes();
  if (now > recorded_bytes_) z_.ledger.record_external(MemCategory::Optimizer, now - recorded_bytes_);
  recorded_bytes_ = std::max(recorded_bytes_, now);
}

void CompressedOptimizer::allocate_errors() {
  errors_.resize(pieces_.size());
  for (size_t i = 0; i < pieces_.size(); ++i) car_.prepare(errors_[i], size_t(pieces_[i]));
  note_held();
}

void CompressedOptimizer::zero_errors() {
  for (ErrorFeedback& e : errors_) {
    std::fill(e.worker.begin(), e.worker.end(), 0.0f);
    std::fill(e.server.begin(), e.server.end(), 0.0f);
  }
}

void CompressedOptimizer::compressed_mean(const std::vector<float*>& buffers) {
  if (z_.comm.world_size() == 1) return;
  if (errors_.size() != pieces_.size()) allocate_errors();
  std::vector<CompressedAllReduce::Tensor> batch;
  for (size_t k = 0; k < pieces_.size(); ++k) batch.push_back({buffers[k], size_t(pieces_[k]), &errors_[k]});
  car_.run(batch);
}

void CompressedOptimizer::mask(float* x, const Tensor& t) const {
  const float* vv = at(s_.v, t);
  for (int64_t i = 0; i < t.size; ++i)
    if (vv[i] == 0.0f) x[i] = 0.0f;
}

void CompressedOptimizer::moments(const Tensor& t, const std::vector<float*>& grads, const Hyper& h, bool variance) {
  const float* g = at(grads, t);
  float* mm = at(s_.m, t);
  float* vv = at(s_.v, t);
  // 1 − β as DeepSpeed's: the double difference rounded to fp32 once.
  const float b1 = float(h.beta1), b2 = float(h.beta2), c1 = float(1.0 - h.beta1), c2 = float(1.0 - h.beta2);
  const float gs = h.grad_scale;
  for (int64_t i = 0; i < t.size; ++i) {
    const float gi = g[i] * gs;
    mm[i] = b1 * mm[i] + c1 * gi;
    if (variance) vv[i] = b2 * vv[i] + c2 * gi * gi;
  }
}

void CompressedOptimizer::adam_update(const Tensor& t, float lr, float* accumulate) {
  float* pp = at(s_.master, t);
  const float* mm = at(s_.m, t);
  const float* vv = at(s_.v, t);
  const float eps = float(eps_), wd = float(weight_decay_);
  for (int64_t i = 0; i < t.size; ++i) {
    float upd = mm[i] / (std::sqrt(vv[i]) + eps);
    if (wd > 0.0f) upd += wd * pp[i];
    const float d = -lr * upd;
    pp[i] += d;
    if (accumulate) accumulate[i] += d;
  }
}

std::unique_ptr<CompressedOptimizer> make_compressed_optimizer(ZeroContext& z, const OptimizerOptions& o,
                                                               const CompressedOptimizer::State& state) {
  if (o.type == OptimizerType::OneBitAdam) return std::make_unique<OneBitAdam>(z, o, state);
  if (o.type == OptimizerType::ZeroOneAdam) return std::make_unique<ZeroOneAdam>(z, o, state);
  if (o.type == OptimizerType::OneBitLamb) return std::make_unique<OneBitLamb>(z, o, state);
  throw std::logic_error(std::string("make_compressed_optimizer: ") + optimizer_type_name(o.type) + " is not one");
}

}  // namespace zt
