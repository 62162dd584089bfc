// One optimizer step: micro-steps, the gradient average over ranks, the global norm from per-shard
// sums added in rank order (so every stage gets the same bits), fp16 scaling, clipping, the update
// of this rank's master shard, and the refresh (plus stage 1–2 all-gather) of the working params.
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "kernels/cuda/fused_adamw.h"
#include "offload/cpu_adam.h"
#include "optim/grad_clip.h"
#include "optim/sgd.h"
#include "runtime/engine/engine_state.h"
#include "runtime/engine/precision_emulation.h"

namespace zt {

// Every rank's `local` values, in rank order. Doubles travel as their bit patterns (int64), so
// the sums made from them are exact and identical on every rank. Goes through backend memory
// because NCCL needs device buffers.
std::vector<double> Engine::State::allgather_doubles(const std::vector<double>& local) {
  const size_t n = local.size();
  std::vector<double> all(n * size_t(W));
  if (W == 1) return local;
  void* buf = ledger.alloc(MemCategory::CommBuffers, all.size() * 8);
  backend.copy_to_device(static_cast<char*>(buf) + size_t(rank) * n * 8, local.data(), n * 8);
  comm.all_gather(static_cast<char*>(buf) + size_t(rank) * n * 8, buf, all.size(), DType::I64);
  backend.copy_to_host(all.data(), buf, all.size() * 8);
  ledger.free(buf);
  return all;
}

void Engine::State::write_working(int u, int64_t begin, int64_t n, const float* values) {
  if (master_aliases_work) return;  // the update wrote the working params themselves
  if (param_nvme) {  // rebuild the unit's shard (padding stays zero); gather_updated writes it back
    if (param_image_unit != u) {
      param_image.assign(size_t(shard_len(u)) * es, 0);
      param_image_unit = u;
    }
    to_act(param_image.data() + begin * int64_t(es), values, n);
    return;
  }
  if (staged[u] && !param_host) {
    publish_working(u, begin, n, values);
    return;
  }
  // The shard is host memory: parameter offload's pinned shard, or the CPU backend's own memory.
  if (!host_fp32 && !param_host) throw std::logic_error("write_working: unit " + std::to_string(u) + " is on the device");
  to_act(working_dst(u, begin), values, n);
}

void Engine::State::gather_updated(int u, std::vector<CommHandlePtr>& gathers) {
  if (param_nvme) write_param_shard(u);
  if (opt.stage != 1 && opt.stage != 2) return;
  if (staged[u]) backend.wait_copy(publish_ticket[u]);  // the shard's copy-in must land before it is sent
  gathers.push_back(comm.all_gather_async(at(work[u], rank_offset(u)), work[u], size_t(padded(u)), cdt));
  if (!opt.overlap_comm) {
    gathers.back()->wait();
    gathers.pop_back();
  }
}

void Engine::State::update_range(float* p, const float* g, float* m, float* v, int64_t n) {
  if (opt.optimizer.type == OptimizerType::SGD)
    sgd_step({p, size_t(n)}, {g, size_t(n)}, m ? std::span<float>(m, size_t(n)) : std::span<float>(), sgd_h);
  else
    offload::cpu_adam_step(p, g, m, v, size_t(n), adam_h);
}

void Engine::State::optimizer_step(StepStats& st) {
  const double loss_scale = scaler ? scaler->scale() : 1.0;
  const float post = float(s_predivide() / W);  // turns the (pre-divided) rank sum into the mean

  // Averaged gradients (still loss-scaled) and this rank's squared-norm partial per shard.
  std::vector<float*> g = collect_grads();
  for (int u = 0; u < U; ++u) {
    if (post != 1.0f)
      for (int64_t i = 0, n = state_len(u); i < n; ++i) g[u][i] *= post;
  }
  std::vector<double> partials;
  if (opt.stage == 0) {
    for (int q = 0; q < W; ++q) {
      double sum = 0;
      for (int u = 0; u < U; ++u) {
        const auto& sh = rank_maps[q]->shard(u);
        sum += sum_squares({g[u] + sh.rank_begin, size_t(sh.valid)});
      }
      partials.push_back(sum);
    }
  } else {
    double sum = 0;
    for (int u = 0; u < U; ++u) sum += sum_squares({g[u], size_t(map->shard(u).valid)});
    partials = allgather_doubles({sum});
  }
  double total = 0;
  for (double p : partials) total += p;
  const double scaled_norm = std::sqrt(total);
  const bool overflow = !std::isfinite(total);
  st.loss_scale = loss_scale;
  st.grad_norm = scaled_norm / loss_scale;
  bool skip = overflow;
  if (scaler) {
    const auto ev = scaler->update(overflow);
    if (scaler->failed()) throw std::runtime_error(scaler->failure_message());
    skip = is_skip(ev);
  }
  st.lr = opt.scheduler ? opt.scheduler->lr_for_step(applied) : opt.optimizer.lr;
  if (skip) {
    st.skipped = true;
    ++skipped;
    return;
  }
  const float grad_scale = float(unscale_and_clip_multiplier(scaled_norm, loss_scale, opt.gradient_clipping));
  double beta1 = opt.optimizer.beta1, beta2 = opt.optimizer.beta2;
  if (opt.scheduler) {
    if (auto b = opt.scheduler->beta1_for_step(applied)) beta1 = *b;
    if (auto b = opt.scheduler->beta2_for_step(applied)) beta2 = *b;
  }
  ++applied;

  const auto t0 = Clock::now();
  std::vector<CommHandlePtr>& gathers = param_gathers;  // in State: waited even if this step throws
  // Stage 1–2 all-gathers are issued in unit order on every rank (collectives must match across
  // ranks), each as soon as its unit's last sub-group is updated; a unit with no element on this
  // rank (all padding) has no sub-group, so units up to the finished one are issued together.
  int next_gather = 0;
  auto gathers_through = [&](int u) {
    for (; next_gather <= u; ++next_gather) gather_updated(next_gather, gathers);
  };
  auto last_of_unit = [&](size_t k) { return k + 1 == subgroups.size() || subgroups[k + 1].unit != subgroups[k].unit; };
  const auto& o = opt.optimizer;
  if (o.type == OptimizerType::Lamb) {
    LambHyper h;
    h.lr = float(st.lr);
    h.beta1 = float(beta1);
    h.beta2 = float(beta2);
    h.eps = float(o.eps);
    h.weight_decay = float(o.weight_decay);
    h.bias_correction = o.bias_correction;
    h.max_coeff = float(o.max_coeff);
    h.min_coeff = float(o.min_coeff);
    h.step = int(applied);
    h.grad_scale = grad_scale;
    lamb_step(g, h);
    for (int u = 0; u < U; ++u) write_working(u, 0, state_len(u), master[u]);
  } else {
    sgd_h = SgdHyper{float(st.lr), float(o.momentum), float(o.dampening), float(o.weight_decay), o.nesterov,
                     int(applied), grad_scale};
    adam_h = AdamWHyper{};
    adam_h.lr = float(st.lr);
    adam_h.beta1 = float(beta1);
    adam_h.beta2 = float(beta2);
    adam_h.eps = float(o.eps);
    adam_h.weight_decay = float(o.weight_decay);
    adam_h.decoupled = o.type == OptimizerType::AdamW;
    adam_h.step = int(applied);
    adam_h.bias_correction = o.bias_correction;
    adam_h.grad_scale = grad_scale;
    // A host update of n elements of unit u; a staged unit's new working params are copied in
    // behind it (with Adam on a 16-bit backend the working copy is written in the same pass).
    const bool fuse_publish = backend.act_dtype() != DType::F32 && !param_nvme && o.type != OptimizerType::SGD;
    auto host_update = [&](int u, int64_t begin, int64_t n, float* p, const float* gr, float* m, float* v) {
      if (param_host && fuse_publish) {  // the working shard is pinned host memory: written in the same pass
        offload::cpu_adam_step(p, gr, m, v, size_t(n), adam_h, offload::AdamOutput{working_dst(u, begin), backend.act_dtype()});
        return;
      }
      if (staged[u] && fuse_publish) {
        adam_publish(u, begin, n, p, gr, m, v);
        return;
      }
      update_range(p, gr, m, v, n);
      write_working(u, begin, n, p);
    };
    if (any(device_adam)) {
      // One fused launch per 48 sub-groups over device master, moments and the reduced bf16 grads;
      // it also writes the bf16 working copy. The grads on the device are rank sums, so the
      // averaging factor joins the unscale/clip factor.
      AdamWHyper h = adam_h;
      h.grad_scale = adam_h.grad_scale * post;
      std::vector<AdamWChunk> chunks;
      for (const SubGroup& sg : subgroups) {
        const int u = sg.unit;
        if (!device_adam[u]) continue;
        const int64_t in_unit = (opt.stage == 1 ? rank_offset(u) : 0) + sg.begin;
        const int64_t in_work = (opt.stage == 1 || opt.stage == 2 ? rank_offset(u) : 0) + sg.begin;
        chunks.push_back({master[u] + sg.begin, at(grads[u], in_unit), moment1[u] + sg.begin, moment2[u] + sg.begin,
                          at(work[u], in_work), size_t(sg.n)});
      }
      fused_adamw(chunks.data(), chunks.size(), backend.act_dtype(), h, backend.native_stream());
    }
    if (pipeline) {
      // NVMe: read sub-group k+1 while k steps and k-1 is written back.
      pipeline->run([&](size_t k, void* data, size_t) {
        const SubGroup& sg = subgroups[k];
        float* rec = static_cast<float*>(data);
        float* p = master_aliases_work ? master[sg.unit] + sg.begin : rec;
        float* m = rec + (master_aliases_work ? 0 : sg.n);
        float* v = o.type == OptimizerType::SGD ? nullptr : m + sg.n;
        if (o.type == OptimizerType::SGD && o.momentum == 0.0) m = nullptr;
        host_update(sg.unit, sg.begin, sg.n, p, g[sg.unit] + sg.begin, m, v);
        if (last_of_unit(k)) gathers_through(sg.unit);
      });
    } else {
      for (size_t k = 0; k < subgroups.size(); ++k) {
        const SubGroup& sg = subgroups[k];
        const int u = sg.unit;
        if (device_adam[u]) continue;
        host_update(u, sg.begin, sg.n, master[u] + sg.begin, g[u] + sg.begin,
                    moment1[u] ? moment1[u] + sg.begin : nullptr, moment2[u] ? moment2[u] + sg.begin : nullptr);
        if (last_of_unit(k)) gathers_through(u);  // overlaps the next units' updates
      }
    }
  }
  gathers_through(U - 1);
  if (ring) ring->drain();  // stage 3 gathers the shards next: every copy-in must have landed
  st.optimizer_s += seconds_since(t0);
  traced("optimizer step", TraceTrack::Compute, t0);
  const auto t1 = Clock::now();
  for (auto& h : gathers) h->wait();
  gathers.clear();
  st.gather_wait_s += seconds_since(t1);
  if (opt.stage == 1 || opt.stage == 2) traced("wait all_gather (updated params)", TraceTrack::Wait, t1);
}

StepStats Engine::train_step(const BatchFn& fill) {
  State& s = *s_;
  StepStats st;
  st.step = ++s.steps;
  s.cur = &st;
  struct ResetCur {  // the timing pointer never outlives this frame, even when a step throws
    State& s;
    ~ResetCur() { s.cur = nullptr; }
  } reset_cur{s};
  const auto t0 = Clock::now();
  const CommStats before = s.comm.stats();
  for (int u = 0; u < s.U; ++u)
    s.backend.zero(s.grads[u], size_t(s.opt.stage >= 2 ? s.shard_len(u) : s.padded(u)) * s.es);

  const double loss_scale = s.scaler ? s.scaler->scale() : 1.0;
  const float dloss = float(loss_scale / (double(s.opt.grad_accum) * s.s_predivide()));
  const int T = s.model_cfg.seq_len;
  double loss_sum = 0;
  for (int m = 0; m < s.opt.grad_accum; ++m) {
    fill(m, s.tokens.data(), s.targets.data());
    s.model->set_batch(s.tokens.data(), s.targets.data(), s.opt.micro_batch, T, dloss);
    s.forward_walk();
    loss_sum += s.model->loss();
    s.backward_walk(m == s.opt.grad_accum - 1);
  }
  s.finish_reductions();
  double total = 0;
  for (double l : s.allgather_doubles({loss_sum})) total += l;
  st.loss = total / (double(s.opt.grad_accum) * s.W);

  s.optimizer_step(st);
  if (s.opt.stage == 3) s.release_all_gathered();  // gathered copies are stale after the update
  s.backend.synchronize();

  const CommStats after = s.comm.stats();
  for (int i = 0; i < kCommOpCount; ++i) {
    st.comm_bytes[i] = after.op[i].bytes - before.op[i].bytes;
    st.comm_calls[i] = after.op[i].calls - before.op[i].calls;
  }
  st.skipped_total = s.skipped;
  st.seconds = seconds_since(t0);
  st.mem_peak = s.ledger.peak_total();
  return st;
}

}  // namespace zt
