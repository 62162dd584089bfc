// One training step, in one direction: the micro-steps' forward (parameters fetched) and backward
// (gradients reduced bucket by bucket) → the global norm from per-rank partials added in rank
// order → the fp16 scaler, clipping → the update of this rank's shard → the updated parameters
// gathered. Each arrow is a verb of one object: ParamGatherer, GradReducer, ShardOptimizer.
#include <cmath>
#include <stdexcept>

#include "optim/grad_clip.h"
#include "runtime/engine/engine_state.h"

namespace zt {

void Engine::State::forward_walk() {
  const int U = part->units();
  for (int u = 0; u < U; ++u) {
    gatherer->before_compute(u, u);
    const void* p = gatherer->params(u);
    const void* emb = model->needs_embedding_unit(u) ? gatherer->params(0) : nullptr;
    const auto t0 = Clock::now();
    model->forward_unit(u, p, emb);
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
    model->backward_unit(u, p, g, emb_p, emb_g);
    z->times.backward_s += seconds_since(t0);
    z->traced("backward " + model->layout(u).name, TraceTrack::Compute, t0);
    reducer->unit_done(u);
    gatherer->after_compute(u, pos);
  }
}

StepStats Engine::train_step(const BatchFn& fill) {
  State& s = *s_;
  const Partition& part = *s.part;
  const int W = part.world_size();
  StepStats st;
  st.step = ++s.steps;
  s.z->times = StepTimes{};
  const auto t0 = Clock::now();
  const CommStats before = s.comm.stats();
  const uint64_t out_before = s.optimizer->grad_bytes_to_host();

  // Micro-steps: forward, backward and the gradient buckets.
  const double loss_scale = s.scaler ? s.scaler->scale() : 1.0;
  const float dloss = float(loss_scale / (double(s.opt.grad_accum) * s.predivide()));
  s.reducer->start_step();
  double loss_sum = 0;
  for (int m = 0; m < s.opt.grad_accum; ++m) {
    fill(m, s.tokens.data(), s.targets.data());
    s.model->set_batch(s.tokens.data(), s.targets.data(), s.opt.micro_batch, s.model_cfg.seq_len, dloss);
    s.forward_walk();
    loss_sum += s.model->loss();
    s.backward_walk(m == s.opt.grad_accum - 1);
  }
  s.reducer->finish();
  double loss_total = 0;
  for (double l : allgather_doubles(*s.z, {loss_sum})) loss_total += l;
  st.loss = loss_total / (double(s.opt.grad_accum) * W);

  // Global norm of the averaged (still loss-scaled) gradients: every rank's partial, in rank order.
  const float post = float(s.predivide() / W);  // turns the pre-divided rank sum into the mean
  std::vector<double> partials = s.optimizer->prepare_and_norm(*s.reducer, post);
  if (part.norm_ranks().size() == 1 && W > 1) partials = allgather_doubles(*s.z, partials);
  double total = 0;
  for (double p : partials) total += p;
  const double scaled_norm = std::sqrt(total);
  st.loss_scale = loss_scale;
  st.grad_norm = scaled_norm / loss_scale;

  // fp16: the scaler skips the step on overflow; clipping and unscaling fold into one factor.
  bool skip = !std::isfinite(total);
  if (s.scaler) {
    const auto ev = s.scaler->update(skip);
    if (s.scaler->failed()) throw std::runtime_error(s.scaler->failure_message());
    skip = is_skip(ev);
  }
  st.lr = s.opt.scheduler ? s.opt.scheduler->lr_for_step(s.applied) : s.opt.optimizer.lr;
  if (skip) {
    st.skipped = true;
    ++s.skipped;
  } else {
    StepHyper h;
    h.lr = st.lr;
    h.beta1 = s.opt.optimizer.beta1;
    h.beta2 = s.opt.optimizer.beta2;
    if (s.opt.scheduler) {
      if (auto b = s.opt.scheduler->beta1_for_step(s.applied)) h.beta1 = *b;
      if (auto b = s.opt.scheduler->beta2_for_step(s.applied)) h.beta2 = *b;
    }
    h.step = int(++s.applied);
    h.grad_scale = float(unscale_and_clip_multiplier(scaled_norm, loss_scale, s.opt.gradient_clipping));
    // The update, with stages 1–2 gathering each bucket of updated parameters as soon as it is ready.
    const auto t1 = Clock::now();
    s.optimizer->step(h, *s.reducer, [&](int u) { s.gatherer->start_param_sync(u); });
    s.z->times.optimizer_s += seconds_since(t1);
    s.z->traced("optimizer step", TraceTrack::Compute, t1);
    s.gatherer->finish_param_sync();
  }
  s.gatherer->release_all();  // stage 3: gathered copies are stale after the update
  s.backend.synchronize();

  const CommStats after = s.comm.stats();
  for (int i = 0; i < kCommOpCount; ++i) {
    st.comm_bytes[i] = after.op[i].bytes - before.op[i].bytes;
    st.comm_calls[i] = after.op[i].calls - before.op[i].calls;
  }
  const StepTimes& t = s.z->times;
  st.forward_s = t.forward_s;
  st.backward_s = t.backward_s;
  st.reduce_wait_s = t.reduce_wait_s;
  st.gather_wait_s = t.gather_wait_s;
  st.optimizer_s = t.optimizer_s;
  st.grad_bytes_to_host = s.optimizer->grad_bytes_to_host() - out_before;
  st.skipped_total = s.skipped;
  st.seconds = seconds_since(t0);
  st.mem_peak = s.ledger.peak_total();
  return st;
}

}  // namespace zt
