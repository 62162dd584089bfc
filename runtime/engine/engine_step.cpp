// One training step, in one direction: the micro-steps' forward (parameters fetched) and backward
// (gradients reduced bucket by bucket) → the optimizer's step (global norm from per-rank partials
// added in rank order, the fp16 scaler, clipping, the update of this rank's shard, each updated
// unit handed to the parameter sync) → the sync finished. Each arrow is a verb of one object:
// ParamGatherer, GradReducer, ShardOptimizer.
#include "runtime/engine/engine_state.h"

#include "kernels/op_record.h"

namespace zt {

void Engine::State::forward_walk() {
  const int U = part->units();
  for (int u = 0; u < U; ++u) {
    gatherer->before_compute(u, u);
    const void* p = gatherer->params(u);
    const void* emb = model->needs_embedding_unit(u) ? gatherer->params(0) : nullptr;
    const auto t0 = Clock::now();
    {
      const OpScope scope(backend, u, OpPass::Forward);  // the unit's ops, when profiling
      model->forward_unit(u, p, emb);
    }
    z->times.forward_s += seconds_since(t0);
    z->traced("forward " + model->layout(u).name, TraceTrack::Compute, t0);
    gatherer->after_compute(u, u);
  }
}

void Engine::State::backward_walk(bool last_micro_step) {
  const int U = part->units();
  reducer->start_micro_step(last_micro_step);
  for (int u = U - 1; u >= 0; --u) {
    const int pos = 2 * U - 1 - u;
    gatherer->before_compute(u, pos);
    const bool with_emb = model->needs_embedding_unit(u);
    const void* p = gatherer->params(u);
    const void* emb_p = with_emb ? gatherer->params(0) : nullptr;
    void* g = reducer->grad_buffer(u);
    void* emb_g = with_emb ? reducer->grad_buffer(0) : nullptr;
    const auto t0 = Clock::now();
    {
      const OpScope scope(backend, u, OpPass::Backward);
      model->backward_unit(u, p, g, emb_p, emb_g);
    }
    z->times.backward_s += seconds_since(t0);
    z->traced("backward " + model->layout(u).name, TraceTrack::Compute, t0);
    reducer->unit_done(u);
    gatherer->after_compute(u, pos);
  }
}

StepStats Engine::train_step(const BatchFn& fill) {
  State& s = *s_;
  const int W = s.comm.world_size();  // every rank's data (under MiCS more than the partition spans)
  StepStats st;
  st.step = ++s.steps;
  s.z->times = StepTimes{};
  const auto t0 = Clock::now();
  const std::vector<CommStats> before = s.groups->snapshot();
  const uint64_t out_before = s.optimizer->grad_bytes_to_host();
  s.gatherer->take_quant_error();  // the step's own gathers only (not an evaluation's before it)

  // Micro-steps: forward, backward and the gradient buckets.
  const float dloss = float(s.optimizer->loss_scale() / (double(s.opt.grad_accum) * s.predivide()));
  const StepComm comm = s.optimizer->step_comm();  // a compressed optimizer's compressed and local steps: no all-reduce
  const bool exact = comm == StepComm::Exact;
  s.reducer->set_all_reduce(exact);
  s.reducer->start_step();
  double loss_sum = 0;
  for (int micro = 0; micro < s.opt.grad_accum; ++micro) {
    fill(micro, s.tokens.data(), s.targets.data());
    s.model->set_batch(s.tokens.data(), s.targets.data(), s.opt.micro_batch, s.model_cfg.seq_len, dloss);
    s.forward_walk();
    loss_sum += s.model->loss();
    s.backward_walk(micro == s.opt.grad_accum - 1);
  }
  s.reducer->finish();
  double loss_total = 0;
  for (double l : allgather_doubles(*s.z, s.comm, {loss_sum})) loss_total += l;
  st.loss = loss_total / (double(s.opt.grad_accum) * W);

  // The update: norm → skip or clip → this rank's shard, stages 1–2 gathering each bucket of
  // updated parameters as soon as it is ready; `mean_factor` turns the pre-divided rank sum into the
  // mean (this rank's own mean when the gradients were not all-reduced).
  const auto t1 = Clock::now();
  const float mean_factor = float(exact ? s.predivide() / W : s.predivide());
  const StepOutcome update =
      s.optimizer->step(s.reducer->reduced(), mean_factor, [&](int u) { s.gatherer->start_param_sync(u); });
  s.z->times.optimizer_s += seconds_since(t1);
  s.z->traced("optimizer step", TraceTrack::Compute, t1);
  if (!update.skipped) s.gatherer->finish_param_sync();
  s.gatherer->release_all();  // stage 3: gathered copies are stale after the update
  s.backend.synchronize();
  st.loss_scale = update.loss_scale;
  st.grad_norm = update.grad_norm;
  st.lr = update.lr;
  st.skipped = update.skipped;
  st.exact_gradients = exact;
  st.optimizer_comm = comm;

  const StepTraffic traffic = s.groups->since(before);
  for (int i = 0; i < kCommOpCount; ++i) {
    st.comm_bytes[i] = traffic.total.bytes[i];
    st.comm_calls[i] = traffic.total.calls[i];
  }
  st.comm_links = traffic.links;
  st.groups = traffic;
  const StepTimes& times = s.z->times;
  st.forward_s = times.forward_s;
  st.backward_s = times.backward_s;
  st.reduce_wait_s = times.reduce_wait_s;
  st.gather_wait_s = times.gather_wait_s;
  st.optimizer_s = times.optimizer_s;
  st.grad_bytes_to_host = s.optimizer->grad_bytes_to_host() - out_before;
  st.skipped_total = s.optimizer->counters().skipped;
  st.seconds = seconds_since(t0);
  st.mem_peak = s.ledger.peak_total();
  st.quant_weights = s.gatherer->take_quant_error();
  st.quant_grads = s.reducer->take_quant_error();
  return st;
}

}  // namespace zt
