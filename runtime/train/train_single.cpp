// The single-process training loop: data, model, per-unit buffers, AdamW, schedule, logging.
#include "runtime/train/train_single.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "kernels/backend.h"
#include "kernels/cpu/cpu_threads.h"
#include "runtime/common/diagnostics.h"
#include "runtime/data/sampler.h"
#include "runtime/data/synthetic.h"
#include "runtime/model/gpt2.h"
#include "runtime/model/init.h"

namespace zt {

namespace {

int64_t warmup_of(const TrainOptions& o) {
  return o.warmup_steps >= 0 ? o.warmup_steps : std::min<int64_t>(100, o.steps / 10);
}

void validate(const TrainOptions& o, const TokenDataset& data) {
  Diagnostics d;
  if (o.steps < 1) d.error("--steps", std::to_string(o.steps), "must be at least 1");
  if (o.micro_batch < 1) d.error("--micro-batch", std::to_string(o.micro_batch), "must be at least 1");
  if (o.grad_accum < 1) d.error("--grad-accum", std::to_string(o.grad_accum), "must be at least 1");
  if (!(o.lr > 0)) d.error("--lr", std::to_string(o.lr), "must be positive");
  if (o.eval_batches < 1) d.error("--eval-batches", std::to_string(o.eval_batches), "must be at least 1");
  const auto& m = o.model;
  if (m.layers < 1 || m.heads < 1 || m.dim < 1 || m.vocab < 2 || m.seq_len < 1)
    d.error("--model", m.name, "layers, heads, dim, seq-len must be >= 1 and vocab >= 2");
  else if (m.dim % m.heads != 0)
    d.error("--dim", std::to_string(m.dim), "must be divisible by --heads " + std::to_string(m.heads),
            "pick a width that is a multiple of the head count");
  if (m.vocab < data.vocab)
    d.error("--vocab", std::to_string(m.vocab),
            "smaller than the data's vocabulary (" + std::to_string(data.vocab) + ")",
            "use --vocab " + std::to_string(data.vocab) + " or a larger preset");
  if (d.has_errors()) throw UserError(d);
}

}  // namespace

double learning_rate(const TrainOptions& o, int64_t step) {
  const int64_t warm = warmup_of(o);
  if (step < warm) return o.lr * double(step + 1) / double(warm);
  const double span = double(std::max<int64_t>(1, o.steps - warm));
  const double progress = std::min(1.0, double(step - warm) / span);
  const double cosine = 0.5 * (1.0 + std::cos(3.141592653589793 * progress));
  return o.lr * (o.min_lr_ratio + (1.0 - o.min_lr_ratio) * cosine);
}

TrainResult train_single(const TrainOptions& o, std::FILE* out) {
  const TokenDataset data = o.data_dir.empty() ? make_synthetic_dataset(o.seed) : load_token_dataset(o.data_dir);
  validate(o, data);
  if (o.threads > 0) set_cpu_threads(o.threads);
  auto backend = make_cpu_backend();
  Backend& be = *backend;
  const ModelConfig& cfg = o.model;
  const int B = o.micro_batch, T = cfg.seq_len;
  GPT2 model(cfg, be, ModelRunOptions{B, o.checkpoint_activations});
  const int U = model.num_units();

  TrainResult result;
  result.unigram_entropy = unigram_entropy(data.train);
  result.params = cfg.total_params();

  // Per-unit buffers: params (fp32 on the CPU backend, so they are also the master copy), grads, m, v.
  const size_t nu = static_cast<size_t>(U);
  std::vector<void*> params(nu), grads(nu), m(nu), v(nu);
  size_t max_unit = 0;
  for (int u = 0; u < U; ++u) {
    const auto& lay = model.layout(u);
    const size_t bytes = size_t(lay.numel) * sizeof(float);
    max_unit = std::max(max_unit, size_t(lay.numel));
    params[size_t(u)] = be.alloc(bytes);
    grads[size_t(u)] = be.alloc(bytes);
    m[size_t(u)] = be.alloc(bytes);
    v[size_t(u)] = be.alloc(bytes);
    std::vector<float> host(size_t(lay.numel));
    init_unit_params(lay, o.seed, 0, lay.numel, host.data());
    be.copy_to_device(params[size_t(u)], host.data(), bytes);
    be.zero(m[size_t(u)], bytes);
    be.zero(v[size_t(u)], bytes);
  }
  std::vector<float> host_grad(max_unit);

  BatchSampler train_sampler(data.train, T, o.seed);
  const BatchSampler val_sampler(data.val, T, o.seed);
  const BatchGeometry geom{1, B, o.grad_accum};
  std::vector<int32_t> tokens(size_t(B) * T), targets(size_t(B) * T);

  if (o.print)
    std::fprintf(out,
                 "model %s: %d layers, %d heads, dim %d, vocab %d, seq %d, %lld params%s | data: %s, unigram "
                 "entropy %.3f nats | micro batch %d x accum %d, %d threads\n",
                 cfg.name.c_str(), cfg.layers, cfg.heads, cfg.dim, cfg.vocab, cfg.seq_len,
                 (long long)result.params, o.checkpoint_activations ? ", activation checkpointing" : "",
                 data.description.c_str(), result.unigram_entropy, B, o.grad_accum, cpu_threads());

  auto evaluate = [&](int64_t step) {
    double sum = 0;
    for (int k = 0; k < o.eval_batches; ++k) {
      val_sampler.fill_sequential(int64_t(k) * B, B, tokens.data(), targets.data());
      model.set_batch(tokens.data(), targets.data(), B, T);
      sum += forward_only(model, params);
    }
    const float val = float(sum / o.eval_batches);
    result.val_losses.emplace_back(step, val);
    if (o.print) std::fprintf(out, "eval  step %6lld | val loss %.4f\n", (long long)step, val);
  };

  std::vector<double> rates;
  for (int64_t step = 0; step < o.steps; ++step) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int u = 0; u < U; ++u) be.zero(grads[size_t(u)], size_t(model.layout(u).numel) * sizeof(float));
    double loss = 0;
    for (int k = 0; k < o.grad_accum; ++k) {
      train_sampler.fill(step, geom, 0, k, tokens.data(), targets.data());
      model.set_batch(tokens.data(), targets.data(), B, T, 1.0f / float(o.grad_accum));
      loss += forward_backward(model, params, grads);
    }
    loss /= o.grad_accum;
    // Global gradient norm, accumulated in double in unit order.
    double sq = 0;
    for (int u = 0; u < U; ++u) {
      const size_t n = size_t(model.layout(u).numel);
      be.act_to_f32(host_grad.data(), grads[size_t(u)], n);
      for (size_t i = 0; i < n; ++i) sq += double(host_grad[i]) * host_grad[i];
    }
    const double norm = std::sqrt(sq);
    const double lr = learning_rate(o, step);
    AdamWHyper h;
    h.lr = float(lr);
    h.beta1 = float(o.beta1);
    h.beta2 = float(o.beta2);
    h.eps = float(o.eps);
    h.step = int(step + 1);
    h.grad_scale = (o.max_grad_norm > 0 && norm > o.max_grad_norm) ? float(o.max_grad_norm / norm) : 1.0f;
    for (int u = 0; u < U; ++u)
      for (const auto& t : model.layout(u).tensors) {
        h.weight_decay = t.decay ? float(o.weight_decay) : 0.0f;
        auto at = [&](void* base) { return static_cast<float*>(base) + t.offset; };
        be.adamw_step(at(params[size_t(u)]), at(grads[size_t(u)]), at(m[size_t(u)]), at(v[size_t(u)]),
                      size_t(t.numel), h);
      }
    be.synchronize();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double rate = double(B) * T * o.grad_accum / secs;
    if (step > 0 || o.steps == 1) rates.push_back(rate);
    result.losses.push_back(float(loss));
    if (o.print)
      std::fprintf(out, "step  %6lld | loss %.4f | lr %.3e | grad norm %.3f | %.0f tokens/s\n", (long long)step + 1,
                   loss, lr, norm, rate);
    if (o.eval_every > 0 && (step + 1) % o.eval_every == 0 && step + 1 < o.steps) evaluate(step + 1);
  }
  evaluate(o.steps);
  std::sort(rates.begin(), rates.end());
  result.tokens_per_s = rates.empty() ? 0 : rates[rates.size() / 2];
  if (o.print)
    std::fprintf(out, "done: %lld steps, final val loss %.4f (unigram entropy %.3f), median %.0f tokens/s\n",
                 (long long)o.steps, result.val_losses.back().second, result.unigram_entropy, result.tokens_per_s);
  for (int u = 0; u < U; ++u) {
    be.free(params[size_t(u)]);
    be.free(grads[size_t(u)]);
    be.free(m[size_t(u)]);
    be.free(v[size_t(u)]);
  }
  return result;
}

}  // namespace zt
