// ShardOptimizer: state placement, the norm partials and the sub-group update walk.
#include "runtime/zero/shard_optimizer.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "base/host_pages.h"
#include "offload/cpu_adam.h"
#include "optim/grad_clip.h"
#include "optim/sgd.h"

namespace zt {

ShardOptimizer::ShardOptimizer(ZeroContext& z, const OptimizerOptions& o, const UpdateRules& rules,
                               int64_t sub_group_size, const StateOffloadOptions& off, offload::PinnedAllocator& pinned,
                               HostTransfer* transfer, ParamStore& store)
    : z_(z), o_(o), rules_(rules), transfer_(transfer), store_(store), off_(off), pinned_(pinned) {
  if (sub_group_size < 1) throw std::invalid_argument("ShardOptimizer: sub_group_size must be >= 1");
  if (z.train_precision == DType::F16) scaler_ = std::make_unique<LossScaler>(rules.loss_scaler);
  const Partition& p = z.part;
  const int U = p.units();
  bool nvme = false;
  for (int u = 0; u < U; ++u) {
    const UnitPart& up = p.unit(u);
    const int64_t L = up.state_len;
    auto array = [&](MemCategory c) -> float* {
      if (up.state == StateHome::Nvme) return nullptr;
      if (up.device_update) return static_cast<float*>(z.ledger.alloc(c, size_t(L) * 4));
      return host_array(c, L, up.staged());
    };
    nvme = nvme || up.state == StateHome::Nvme;
    master_.push_back(p.master_aliases_params() ? static_cast<float*>(store.working_at(u, 0)) : array(MemCategory::Master));
    m_.push_back(has_m() ? array(MemCategory::Optimizer) : nullptr);
    v_.push_back(has_v() ? array(MemCategory::Optimizer) : nullptr);
    if (has_fresh_v()) fresh_v_.push_back(array(MemCategory::Optimizer));
    grad_host_.push_back(up.staged() ? host_array(MemCategory::CommBuffers, L, true) : nullptr);
  }
  // The walk covers each unit's real elements (the whole unit in stage 0, this rank's shard
  // otherwise; never the padding) in sub-groups of at most sub_group_size elements.
  for (int u = 0; u < U; ++u)
    for (int64_t a = 0, hi = p.unit(u).state_valid; a < hi; a += sub_group_size)
      subgroups_.push_back({u, a, std::min(sub_group_size, hi - a)});
  if (is_compressed(o.type)) compressed_ = make_compressed_optimizer(z, o, {master_, m_, v_, fresh_v_});
  if (!nvme) return;
  std::vector<size_t> bytes;
  for (const SubGroup& sg : subgroups_) bytes.push_back(std::max<size_t>(4, record_floats(sg.n) * 4));
  offload::SwapperConfig sc;
  sc.nvme_path = off.nvme_path;
  sc.rank = p.rank();
  sc.aio = off.aio;
  swapper_ = std::make_unique<offload::NvmeSwapper>(sc, bytes);
  pipeline_ = std::make_unique<offload::SwapPipeline>(*swapper_, std::max(1, off.buffer_count), pinned);
  z.ledger.record_host(MemCategory::Optimizer,
                       uint64_t(pipeline_->buffer_count()) * std::max<uint64_t>(swapper_->max_padded_bytes(), 4096));
  initial_.resize(size_t(U));
}

ShardOptimizer::~ShardOptimizer() = default;

// Host fp32 storage the ledger counts: as host memory when offload keeps it apart from the
// backend's, else as backend memory (the CPU backend's own state).
float* ShardOptimizer::host_array(MemCategory c, int64_t n, bool apart) {
  const size_t bytes = std::max<size_t>(kHostPageBytes, (size_t(n) * 4 + kHostPageBytes - 1) / kHostPageBytes * kHostPageBytes);
  auto* p = static_cast<float*>(alloc_host_pages(bytes));
  std::memset(p, 0, bytes);
  store_h_.emplace_back(p);
  if (apart) z_.ledger.record_host(c, uint64_t(n) * 4);
  else z_.ledger.record_external(c, uint64_t(n) * 4);
  return p;
}

size_t ShardOptimizer::record_floats(int64_t n) const {
  return size_t(n) * ((z_.part.master_aliases_params() ? 0 : 1) + (has_m() ? 1 : 0) + (has_v() ? 1 : 0));
}

void ShardOptimizer::initialize(int u, const float* values) {
  const UnitPart& up = z_.part.unit(u);
  const size_t L = size_t(up.state_len);
  if (z_.part.master_aliases_params()) return;  // the ParamStore holds them
  if (up.state == StateHome::Nvme) initial_[size_t(u)].assign(values, values + L);
  else if (up.device_update) z_.backend.copy_to_device(master_[size_t(u)], values, L * 4);
  else std::memcpy(master_[size_t(u)], values, L * 4);
}

void ShardOptimizer::finish_initialize() {
  if (!pipeline_) return;
  pipeline_->initialize([&](size_t k, void* data, size_t n_bytes) {
    std::memset(data, 0, n_bytes);  // moments start at zero
    const SubGroup& sg = subgroups_[k];
    std::memcpy(data, initial_[size_t(sg.unit)].data() + sg.begin, size_t(sg.n) * 4);
  });
  initial_.clear();
}

double ShardOptimizer::next_lr() const {
  return rules_.scheduler ? rules_.scheduler->lr_for_step(applied_) : o_.lr;
}

UpdateCounters ShardOptimizer::counters() const {
  UpdateCounters c{applied_, skipped_, std::nullopt};
  if (scaler_) c.scaler = scaler_->state();
  return c;
}

void ShardOptimizer::restore_counters(const UpdateCounters& c) {
  applied_ = c.applied;
  skipped_ = c.skipped;
  if (scaler_ && c.scaler) scaler_->restore(*c.scaler);
}

StepOutcome ShardOptimizer::step(const ReducedGrads& grads, float mean_factor, const std::function<void(int)>& units_done) {
  const Partition& p = z_.part;
  StepOutcome out;
  out.loss_scale = loss_scale();
  // Global norm of the averaged (still loss-scaled) gradients: every rank's partial, in rank order.
  std::vector<double> partials = prepare_and_norm(grads, mean_factor);
  if (p.norm_ranks().size() == 1 && p.world_size() > 1) partials = allgather_doubles(z_, partials);
  double total = 0;
  for (double partial : partials) total += partial;
  double scaled_norm = std::sqrt(total);
  // fp16: the scaler skips the step on overflow; clipping and unscaling fold into one factor.
  out.skipped = !std::isfinite(total);
  // Gradients that were not all-reduced (the compressed optimizers' compressed and local steps) differ between ranks, and
  // so do their norms: every rank skips when any overflowed (DeepSpeed max-reduces the flag). The
  // clipping norm is DeepSpeed's too: in fp16 and bf16 (its FP16_Optimizer wraps 1-bit Adam in both)
  // each rank's own; in fp32 (clip_grad_norm_) the mean of the ranks' norms.
  if (!exact_gradients() && p.world_size() > 1) {
    const std::vector<double> all = allgather_doubles(z_, {out.skipped ? 1.0 : 0.0, scaled_norm});
    double mean = 0;
    for (size_t r = 0; r < all.size(); r += 2) {
      out.skipped = out.skipped || all[r] != 0.0;
      mean += all[r + 1] / double(p.world_size());
    }
    if (z_.train_precision == DType::F32) scaled_norm = mean;
  }
  out.grad_norm = scaled_norm / out.loss_scale;
  if (scaler_) {
    const LossScaleEvent event = scaler_->update(out.skipped);
    if (scaler_->failed()) throw std::runtime_error(scaler_->failure_message());
    out.skipped = is_skip(event);
  }
  out.lr = next_lr();
  if (out.skipped) {
    ++skipped_;
    return out;
  }
  StepHyper h;
  h.lr = out.lr;
  h.beta1 = o_.beta1;
  h.beta2 = o_.beta2;
  if (rules_.scheduler) {
    if (auto b = rules_.scheduler->beta1_for_step(applied_)) h.beta1 = *b;
    if (auto b = rules_.scheduler->beta2_for_step(applied_)) h.beta2 = *b;
  }
  h.step = int(++applied_);
  h.grad_scale = float(unscale_and_clip_multiplier(scaled_norm, out.loss_scale, rules_.gradient_clipping));
  update(h, grads, units_done);
  return out;
}

std::vector<double> ShardOptimizer::prepare_and_norm(const ReducedGrads& grads, float mean_factor) {
  const Partition& p = z_.part;
  const bool f32 = z_.working_type() == DType::F32;
  pending_mean_factor_ = f32 ? 1.0f : mean_factor;
  if (f32 && mean_factor != 1.0f)
    for (int u = 0; u < p.units(); ++u) z_.backend.scale(grads.unit[size_t(u)], mean_factor, size_t(p.unit(u).state_len));
  std::vector<double> partials;
  for (int q : p.norm_ranks()) {
    double sum = 0;
    for (const UnitRange& r : p.norm_ranges(q))
      sum += z_.backend.sum_squares(z_.element_at(grads.unit[size_t(r.unit)], r.begin), size_t(r.n), pending_mean_factor_);
    partials.push_back(sum);
  }
  return partials;
}

// fp32 host pointers to every host-updated unit's (averaged) gradients: in place for state that
// lives in host-addressable backend memory, copied out for staged units; null for device units.
std::vector<float*> ShardOptimizer::host_grads(const ReducedGrads& grads) {
  const Partition& p = z_.part;
  std::vector<float*> g(size_t(p.units()), nullptr);
  std::vector<HostTransfer::Out> out;
  for (int u = 0; u < p.units(); ++u) {
    const UnitPart& up = p.unit(u);
    if (up.device_update) continue;
    if (!up.staged()) {
      g[size_t(u)] = static_cast<float*>(grads.unit[size_t(u)]);
      continue;
    }
    g[size_t(u)] = grad_host_[size_t(u)];
    out.push_back({grads.unit[size_t(u)], grad_host_[size_t(u)], up.state_len});
  }
  if (!out.empty()) {
    if (!transfer_) throw std::logic_error("ShardOptimizer: staged units need the transfer ring");
    transfer_->copy_out(out);
  }
  if (pending_mean_factor_ != 1.0f)  // 16-bit gradients: the averaging factor is applied to the fp32 host copies
    for (const auto& o : out)
      for (int64_t i = 0; i < o.n; ++i) o.dst[i] *= pending_mean_factor_;
  return g;
}

void ShardOptimizer::host_update(int u, int64_t begin, int64_t n, float* p, const float* g, float* m, float* v) {
  const UnitPart& up = z_.part.unit(u);
  const DType act = z_.working_type();
  // With Adam on a 16-bit backend the working copy is written in the same pass.
  const bool fuse = act != DType::F32 && up.param != ParamHome::Nvme && o_.type != OptimizerType::SGD;
  if (fuse && store_.host_working_copy(u)) {
    offload::cpu_adam_step(p, g, m, v, size_t(n), adam_h_, offload::AdamOutput{store_.working_at(u, begin), act});
    return;
  }
  if (fuse && up.staged()) {
    transfer_->publish(u, store_.working_at(u, begin), n, [&](void* slot, int64_t first, int64_t len) {
      offload::cpu_adam_step(p + first, g + first, m + first, v + first, size_t(len), adam_h_,
                             offload::AdamOutput{slot, act});
    });
    return;
  }
  if (o_.type == OptimizerType::SGD)
    sgd_step({p, size_t(n)}, {g, size_t(n)}, m ? std::span<float>(m, size_t(n)) : std::span<float>(), sgd_h_);
  else
    offload::cpu_adam_step(p, g, m, v, size_t(n), adam_h_);
  store_.write(u, begin, n, p);
}

void ShardOptimizer::update(const StepHyper& h, const ReducedGrads& grads, const std::function<void(int)>& units_done) {
  const Partition& p = z_.part;
  const int U = p.units();
  const std::vector<float*> g = host_grads(grads);
  // Units are reported in order on every rank (the collectives they start must match across
  // ranks); a unit with no element on this rank (all padding) has no sub-group, so every unit up
  // to a finished one is reported together.
  int next_done = 0;
  auto announce_done_through = [&](int u) {
    for (; next_done <= u; ++next_done) {
      store_.finish_update(next_done);
      units_done(next_done);
    }
  };
  auto last_of_unit = [&](size_t k) {
    return k + 1 == subgroups_.size() || subgroups_[k + 1].unit != subgroups_[k].unit;
  };
  if (compressed_) {
    compressed_->step(h.step - 1, {h.lr, h.beta1, h.beta2, h.grad_scale}, g);
    for (int u = 0; u < U; ++u) store_.write(u, 0, p.unit(u).state_len, master_[size_t(u)]);
  } else if (o_.type == OptimizerType::Lamb) {
    LambHyper lh;
    lh.lr = float(h.lr);
    lh.beta1 = float(h.beta1);
    lh.beta2 = float(h.beta2);
    lh.eps = float(o_.eps);
    lh.weight_decay = float(o_.weight_decay);
    lh.bias_correction = o_.bias_correction;
    lh.max_coeff = float(o_.max_coeff);
    lh.min_coeff = float(o_.min_coeff);
    lh.step = h.step;
    lh.grad_scale = h.grad_scale;
    lamb_step(g, lh);
    for (int u = 0; u < U; ++u) store_.write(u, 0, p.unit(u).state_len, master_[size_t(u)]);
  } else {
    sgd_h_ = SgdHyper{float(h.lr), float(o_.momentum), float(o_.dampening), float(o_.weight_decay), o_.nesterov, h.step,
                      h.grad_scale};
    adam_h_ = AdamWHyper{};
    adam_h_.lr = float(h.lr);
    adam_h_.beta1 = float(h.beta1);
    adam_h_.beta2 = float(h.beta2);
    adam_h_.eps = float(o_.eps);
    adam_h_.weight_decay = float(o_.weight_decay);
    adam_h_.decoupled = o_.type == OptimizerType::AdamW;
    adam_h_.step = h.step;
    adam_h_.bias_correction = o_.bias_correction;
    adam_h_.grad_scale = h.grad_scale;
    if (p.any_device_update()) {
      // One multi-tensor AdamW over the device-resident sub-groups; it also writes the working copy.
      // 16-bit gradients are rank sums still: the averaging factor joins the unscale/clip factor.
      AdamWHyper dh = adam_h_;
      dh.grad_scale = adam_h_.grad_scale * pending_mean_factor_;
      std::vector<AdamWChunk> chunks;
      for (const SubGroup& sg : subgroups_) {
        const int u = sg.unit;
        if (!p.unit(u).device_update) continue;
        chunks.push_back({master_[size_t(u)] + sg.begin, z_.element_at(grads.unit[size_t(u)], sg.begin), m_[size_t(u)] + sg.begin,
                          v_[size_t(u)] + sg.begin, store_.working_at(u, sg.begin), size_t(sg.n)});
      }
      z_.backend.adamw_multi_tensor(chunks.data(), chunks.size(), z_.working_type(), dh);
    }
    if (pipeline_) {
      // NVMe: read sub-group k+1 while k steps and k-1 is written back.
      pipeline_->run([&](size_t k, void* data, size_t) {
        const SubGroup& sg = subgroups_[k];
        float* rec = static_cast<float*>(data);
        float* mm = has_m() ? rec + sg.n : nullptr;
        float* vv = has_v() ? rec + 2 * sg.n : nullptr;
        host_update(sg.unit, sg.begin, sg.n, rec, g[size_t(sg.unit)] + sg.begin, mm, vv);
        if (last_of_unit(k)) announce_done_through(sg.unit);
      });
    } else {
      for (size_t k = 0; k < subgroups_.size(); ++k) {
        const SubGroup& sg = subgroups_[k];
        const int u = sg.unit;
        if (p.unit(u).device_update) continue;
        host_update(u, sg.begin, sg.n, master_[size_t(u)] + sg.begin, g[size_t(u)] + sg.begin,
                    m_[size_t(u)] ? m_[size_t(u)] + sg.begin : nullptr, v_[size_t(u)] ? v_[size_t(u)] + sg.begin : nullptr);
        if (last_of_unit(k)) announce_done_through(u);  // overlaps the next units' updates
      }
    }
  }
  announce_done_through(U - 1);
  if (transfer_) transfer_->drain();  // stage 3 gathers the shards next: every copy-in must have landed
}

const float* ShardOptimizer::master_on_host(int u, std::vector<float>& scratch) {
  const UnitPart& up = z_.part.unit(u);
  if (up.state != StateHome::Nvme && !up.device_update) return master_[size_t(u)];
  scratch.assign(size_t(up.state_len), 0.0f);  // the padding past state_valid reads as zero
  if (up.state == StateHome::Nvme) read_state(StateArray::Master, u, 0, up.state_valid, scratch.data());
  else z_.backend.copy_to_host(scratch.data(), master_[size_t(u)], scratch.size() * 4);
  return scratch.data();
}

bool ShardOptimizer::has_state(StateArray a) const {
  switch (a) {
    case StateArray::Master: return true;
    case StateArray::Moment1: return has_m();
    case StateArray::Moment2: return has_v();
    case StateArray::Moment3: return has_fresh_v();
  }
  return false;
}

void ShardOptimizer::read_state(StateArray a, int u, int64_t begin, int64_t n, float* out) {
  access_state(a, u, begin, n, out, false);
}

void ShardOptimizer::write_state(StateArray a, int u, int64_t begin, int64_t n, const float* in) {
  access_state(a, u, begin, n, const_cast<float*>(in), true);
}

void ShardOptimizer::check_state_range(StateArray a, int u, int64_t begin, int64_t n) const {
  const UnitPart& up = z_.part.unit(u);
  if (!has_state(a)) throw std::invalid_argument("ShardOptimizer: this optimizer keeps no such state array");
  if (begin < 0 || n < 0 || begin + n > up.state_valid)
    throw std::out_of_range("ShardOptimizer: state range [" + std::to_string(begin) + ", " + std::to_string(begin + n) +
                            ") of unit " + std::to_string(u) + " is outside its " + std::to_string(up.state_valid) +
                            " real elements");
}

float* ShardOptimizer::host_state(StateArray a, int u, int64_t begin, int64_t n) {
  check_state_range(a, u, begin, n);
  const UnitPart& up = z_.part.unit(u);
  if (up.state == StateHome::Nvme || up.device_update) return nullptr;
  return arrays_of(a)[size_t(u)] + begin;
}

void ShardOptimizer::access_state(StateArray a, int u, int64_t begin, int64_t n, float* host, bool write) {
  const UnitPart& up = z_.part.unit(u);
  check_state_range(a, u, begin, n);
  if (n == 0) return;
  if (up.state != StateHome::Nvme) {
    float* base = arrays_of(a)[size_t(u)] + begin;
    const size_t bytes = size_t(n) * 4;
    if (up.device_update) {
      if (write) z_.backend.copy_to_device(base, host, bytes);
      else z_.backend.copy_to_host(host, base, bytes);
    } else if (write) {
      std::memcpy(base, host, bytes);
    } else {
      std::memcpy(host, base, bytes);
    }
    return;
  }
  // A record is [master n][moment1 n][moment2 n] (SGD: no moment2): read every sub-group the range
  // touches; a write changes its part and writes the record back.
  if (!record_.data()) record_ = pinned_.allocate(swapper_->max_padded_bytes());
  float* rec = static_cast<float*>(record_.data());
  if (a == StateArray::Moment3) throw std::logic_error("ShardOptimizer: 1-bit LAMB's fresh variance is never paged to NVMe");
  const int64_t slot = a == StateArray::Master ? 0 : a == StateArray::Moment1 ? 1 : 2;
  for (size_t k = 0; k < subgroups_.size(); ++k) {
    const SubGroup& sg = subgroups_[k];
    const int64_t lo = std::max(begin, sg.begin), hi = std::min(begin + n, sg.begin + sg.n);
    if (sg.unit != u || lo >= hi) continue;
    swapper_->wait(swapper_->read(k, rec));
    float* at = rec + slot * sg.n + (lo - sg.begin);
    if (write) {
      std::memcpy(at, host + (lo - begin), size_t(hi - lo) * 4);
      swapper_->wait(swapper_->write(k, rec));
    } else {
      std::memcpy(host + (lo - begin), at, size_t(hi - lo) * 4);
    }
  }
}

}  // namespace zt
