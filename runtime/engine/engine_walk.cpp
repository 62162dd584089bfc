// The unit walks of one micro-step: forward 0..U-1 and backward U-1..0, with stage 3's gathers,
// prefetch and releases, and each stage's gradient collectives issued as backward produces them.
#include "runtime/engine/engine_state.h"
#include "runtime/engine/precision_emulation.h"

namespace zt {

namespace {
// Walk positions: forward of unit u is position u; backward of unit u is position 2U-1-u.
int unit_at(int pos, int U) { return pos < U ? pos : 2 * U - 1 - pos; }
}  // namespace

// ---------------------------------------------------------------------------------------------
// Stage 3: gathers and releases.

void Engine::State::gather(int u, bool wait) {
  auto& g = gathered[u];
  if (!g.full) {
    g.full = acquire_full(u, false);
    live_elements += padded(u);
    const void* shard = work[u];
    if (param_host || param_nvme) shard = g.shard_in = bring_in_shard(u);
    g.pending = comm.all_gather_async(shard, g.full, size_t(padded(u)), cdt);
    g.issued = Clock::now();
  }
  if (wait && g.pending) {
    const auto t0 = Clock::now();
    g.pending->wait();
    if (cur) cur->gather_wait_s += seconds_since(t0);
    traced("wait all_gather " + unit_name(u), TraceTrack::Wait, t0);
    traced("all_gather " + unit_name(u), TraceTrack::Comm, g.issued);
    g.pending.reset();
    drop_shard_in(u);
  }
}

const void* Engine::State::params_for(int u) {
  if (opt.stage < 3) return work[u];
  gather(u, true);
  return gathered[u].full;
}

// Uses of unit u along the walk (the tied head also reads the embedding unit).
static bool uses_unit(int pos, int u, int U, bool tied) {
  const int v = unit_at(pos, U);
  return v == u || (tied && u == 0 && v == U - 1);
}

void Engine::State::maybe_release(int u, int pos) {
  auto& g = gathered[u];
  if (!g.full) return;
  const bool tied = model_cfg.tied_embeddings;
  const bool persistent = map->shard(u).numel <= opt.param_persistence_threshold;
  int next = -1;
  for (int q = pos + 1; q < 2 * U && next < 0; ++q)
    if (uses_unit(q, u, U, tied)) next = q;
  if (persistent) return;  // kept until the step's update makes it stale (release_all_gathered)
  bool keep = false;
  if (next >= 0) {
    int64_t distance = 0;  // parameters computed on before the next use
    for (int q = pos + 1; q < next; ++q) distance += map->shard(unit_at(q, U)).numel;
    keep = distance < opt.max_reuse_distance && live_elements <= opt.max_live_parameters;
  }
  if (keep) return;
  if (g.pending) g.pending->wait();
  g.pending.reset();
  drop_shard_in(u);
  release_full(u, g.full);
  live_elements -= padded(u);
  g.full = nullptr;
}

void Engine::State::prefetch_after(int pos) {
  if (opt.stage != 3 || !opt.overlap_comm) return;
  int64_t budget = opt.prefetch_bucket_size;
  for (int q = pos + 1; q < 2 * U; ++q) {
    const int v = unit_at(q, U);
    if (gathered[v].full) continue;
    if (padded(v) > budget || live_elements + padded(v) > opt.max_live_parameters) break;
    gather(v, false);
    budget -= padded(v);
  }
}

void Engine::State::release_all_gathered() {
  for (int u = 0; u < U; ++u) {
    auto& g = gathered[u];
    if (!g.full) continue;
    if (g.pending) g.pending->wait();
    g.pending.reset();
    drop_shard_in(u);
    release_full(u, g.full);
    live_elements -= padded(u);
    g.full = nullptr;
  }
}

// ---------------------------------------------------------------------------------------------
// Forward.

void Engine::State::forward_walk() {
  const bool tied = model_cfg.tied_embeddings;
  for (int u = 0; u < U; ++u) {
    if (opt.stage == 3) {
      gather(u, false);  // issue this unit's gather first: collectives complete in issue order
      prefetch_after(u);
    }
    const void* p = params_for(u);
    const void* emb = model->needs_embedding_unit(u) ? params_for(0) : nullptr;
    const auto t0 = Clock::now();
    model->forward_unit(u, p, emb);
    if (cur) cur->forward_s += seconds_since(t0);
    traced("forward " + unit_name(u), TraceTrack::Compute, t0);
    if (opt.stage == 3) {
      maybe_release(u, u);
      if (tied && u == U - 1) maybe_release(0, u);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Backward and gradient reduction.

// Stage 0: all-reduce unit u's gradients in buckets of at most reduce_bucket_size elements (each a
// multiple of world size × alignment, so every bucket splits like the unit does).
static void issue_all_reduce(Engine::State& s, int u, std::vector<PendingCollective>& out) {
  const int64_t quantum = int64_t(s.W) * s.opt.shard_alignment;
  const int64_t bucket = std::max(quantum, s.opt.reduce_bucket_size / quantum * quantum);
  for (int64_t off = 0; off < s.padded(u); off += bucket) {
    const int64_t n = std::min(bucket, s.padded(u) - off);
    void* p = s.at(s.grads[u], off);
    out.push_back({s.comm.all_reduce_async(p, p, size_t(n), s.cdt, ReduceOp::Sum), "all_reduce " + s.unit_name(u),
                   Clock::now()});
  }
}

void Engine::State::drain_reduce(bool all) {
  while (!reducing.empty() && (all || reducing.size() > 1)) {
    auto r = std::move(reducing.front());
    reducing.pop_front();
    const auto t0 = Clock::now();
    r.handle->wait();
    if (cur) cur->reduce_wait_s += seconds_since(t0);
    traced("wait reduce_scatter " + unit_name(r.unit), TraceTrack::Wait, t0);
    traced("reduce_scatter " + unit_name(r.unit), TraceTrack::Comm, r.issued);
    void* reduced = at(r.full, rank_offset(r.unit));
    emulate(reduced, shard_len(r.unit), comm_p());  // the sum as the communication type holds it
    backend.accumulate(grads[r.unit], reduced, size_t(shard_len(r.unit)));
    emulate(grads[r.unit], shard_len(r.unit), accum_p());
    release_full(r.unit, r.full);
  }
}

static void issue_unit_reduction(Engine::State& s, int u) {
  s.emulate(s.grads[u], s.padded(u), s.comm_p());  // sent in the communication type
  if (s.opt.stage == 0) {
    issue_all_reduce(s, u, s.pending_unit_reductions);
  } else if (s.opt.stage == 1) {
    void* full = s.grads[u];
    s.pending_unit_reductions.push_back(
        {s.comm.reduce_scatter_async(full, s.at(full, s.rank_offset(u)), size_t(s.padded(u)), s.cdt, ReduceOp::Sum),
         "reduce_scatter " + s.unit_name(u), Clock::now()});
  }
  if (!s.opt.overlap_comm) s.finish_reductions();
}

void Engine::State::backward_walk(bool last_micro_step) {
  const bool tied = model_cfg.tied_embeddings;
  // Every stage computes a micro-step's gradient into a zeroed full-unit buffer and then adds it
  // to the accumulated gradient (stages 0–1 in place, stages 2–3 after the reduce-scatter), so at
  // one micro-step, or one rank, the additions happen in the same order whatever the stage.
  auto grad_target = [&](int u) -> void* {
    if (!grad_full[u]) grad_full[u] = acquire_full(u, true);
    return grad_full[u];
  };
  for (int u = U - 1; u >= 0; --u) {
    const int pos = 2 * U - 1 - u;
    if (opt.stage == 3) {
      gather(u, false);
      prefetch_after(pos);
    }
    const bool with_emb = model->needs_embedding_unit(u);
    const void* p = params_for(u);
    const void* emb_p = with_emb ? params_for(0) : nullptr;
    void* g = grad_target(u);
    void* emb_g = with_emb ? grad_target(0) : nullptr;
    const auto t0 = Clock::now();
    model->backward_unit(u, p, g, emb_p, emb_g);
    if (cur) cur->backward_s += seconds_since(t0);
    traced("backward " + unit_name(u), TraceTrack::Compute, t0);
    emulate(g, padded(u), opt.precision);  // backward writes gradients in the working type

    void* full = grad_full[u];
    grad_full[u] = nullptr;
    if (opt.stage < 2) {
      backend.accumulate(grads[u], full, size_t(padded(u)));
      emulate(grads[u], padded(u), accum_p());
      release_full(u, full);
    }
    if (opt.stage >= 2) {
      emulate(full, padded(u), comm_p());  // sent in the communication type
      // Reduce-scatter in place: this rank's slice of the full buffer receives the sum.
      reducing.push_back({u, full,
                          comm.reduce_scatter_async(full, at(full, rank_offset(u)), size_t(padded(u)), cdt,
                                                    ReduceOp::Sum),
                          Clock::now()});
      drain_reduce(!opt.overlap_comm);
    } else if (last_micro_step && opt.overlap_comm) {
      issue_unit_reduction(*this, u);  // overlapped with the backward of the units below
    }
    if (opt.stage == 3) {
      maybe_release(u, pos);
      if (tied && u == U - 1) maybe_release(0, pos);
    }
  }
  if (last_micro_step && opt.stage < 2 && !opt.overlap_comm)
    for (int u = U - 1; u >= 0; --u) issue_unit_reduction(*this, u);
}

void Engine::State::finish_reductions() {
  for (auto& p : pending_unit_reductions) {
    const auto t0 = Clock::now();
    p.handle->wait();
    if (cur) cur->reduce_wait_s += seconds_since(t0);
    traced("wait " + p.name, TraceTrack::Wait, t0);
    traced(p.name, TraceTrack::Comm, p.issued);
  }
  pending_unit_reductions.clear();
  drain_reduce(true);
  for (auto& h : param_gathers) h->wait();
  param_gathers.clear();
}

}  // namespace zt
