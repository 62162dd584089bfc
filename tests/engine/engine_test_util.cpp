// Engine test helpers: process-wide world, tiny model, and the few-step runner.
#include "tests/engine/engine_test_util.h"

#include <numeric>
#include <stdexcept>

namespace zt::test {

World& world() {
  static World w;  // test-process fixture, filled by main()
  return w;
}

ModelConfig tiny_model(bool tied) {
  ModelConfig m = *model_preset("tiny");
  m.vocab = 256;  // the built-in data is byte-level
  m.tied_embeddings = tied;
  return m;
}

ModelConfig tiny_llama_model(bool tied) {
  ModelConfig m = *model_preset(tied ? "llama-tiny-tied" : "llama-tiny");
  m.vocab = 256;  // the built-in data is byte-level
  return m;
}

EngineOptions base_options(int stage, int grad_accum, DType precision, bool overlap) {
  EngineOptions o;
  o.zero.stage = stage;
  o.grad_accum = grad_accum;
  const int W = world().comm->world_size();
  if (kGlobalBatch % (W * grad_accum) != 0) throw std::invalid_argument("global batch does not split");
  o.micro_batch = kGlobalBatch / (W * grad_accum);
  o.zero.precision = precision;
  o.reduce.overlap = o.gather.overlap = overlap;
  o.optimizer.type = OptimizerType::AdamW;
  o.optimizer.lr = 3e-3;
  o.optimizer.weight_decay = 0.1;
  o.update.gradient_clipping = 1.0;
  o.seed = 42;
  // Small buckets so that stage 0 splits units into several all-reduces.
  o.reduce.bucket_elems = 512;
  o.gather.allgather_bucket_size = 512;
  return o;
}

std::vector<int64_t> rank_checksums(Engine& e) {
  Communicator& c = *world().comm;
  std::vector<int64_t> all(size_t(c.world_size()));
  all[size_t(c.rank())] = int64_t(e.param_summary().checksum);
  c.all_gather(all.data() + c.rank(), all.data(), all.size(), DType::I64);
  return all;
}

double mean_of_last(const std::vector<double>& v, size_t n) {
  return std::accumulate(v.end() - std::ptrdiff_t(n), v.end(), 0.0) / double(n);
}

RunResult run_engine(const ModelConfig& model, EngineOptions options, int steps) {
  World& w = world();
  Engine engine(model, options, *w.backend, *w.comm);
  BatchSampler sampler(w.data.train, model.seq_len, 7);
  const BatchGeometry geom{w.comm->world_size(), options.micro_batch, options.grad_accum};
  RunResult r;
  for (int s = 0; s < steps; ++s) {
    auto st = engine.train_step([&](int micro, int32_t* tok, int32_t* tgt) {
      sampler.fill(s, geom, w.comm->rank(), micro, tok, tgt);
    });
    r.losses.push_back(st.loss);
    r.norms.push_back(st.grad_norm);
    r.stats.push_back(st);
    r.skipped = st.skipped_total;
  }
  r.resident = engine.ledger().current();
  r.host = engine.ledger().host();
  r.summary = engine.param_summary();
  r.peak = engine.ledger().peak_by_category();
  r.peak_total = engine.ledger().peak_total();
  return r;
}

}  // namespace zt::test
