// Engine: builds the ZeRO objects for one run (partition first, then the buffers each object owns),
// gives every rank its deterministic initial parameters (they depend on the seed only, never on the
// stage or the world size), and answers the summaries: evaluation and the consolidated checksum.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "runtime/engine/engine_checkpoint.h"
#include "runtime/engine/engine_state.h"
#include "runtime/zero/unit_buffer_plan.h"
#include "runtime/zero/zero_rules.h"
#include "runtime/model/init.h"

namespace zt {

namespace {

// The engine's own preconditions: what reaches a refusal here is a caller's mistake.
void check_options(const EngineOptions& o) {
  if (o.micro_batch < 1 || o.grad_accum < 1) throw std::invalid_argument("engine: micro_batch and grad_accum must be >= 1");
  if (o.reduce.bucket_elems < 1 || o.gather.allgather_bucket_size < 1)
    throw std::invalid_argument("engine: reduce_bucket_size and allgather_bucket_size must be >= 1 element");
  if (o.offload.chunk_elems < 1) throw std::invalid_argument("engine: offload chunk_elems must be >= 1");
}

// The ZeRO rules (runtime/zero/zero_rules.h) that config validation reports with their keys.
void check_zero_rules(const EnginePlan& plan, Backend& b) {
  const std::vector<ZeroRule> broken = plan.broken_rules();
  if (broken.empty()) return;
  const ZeroOptionSet zs = plan.zero_option_set();
  std::string text = "engine (" + b.name() + " backend):";
  for (ZeroRule r : broken) text += " " + describe(r, zs) + ";";
  text.back() = '.';
  throw std::invalid_argument(text);
}

offload::PinnedAllocatorOptions pinned_options(const EngineOptions& o, std::vector<std::string>& warnings) {
  offload::PinnedAllocatorOptions po;
  po.pin_memory = o.offload.pin_memory;
  po.warn = [&warnings](const std::string& w) { warnings.push_back(w); };
  return po;
}

}  // namespace

Engine::State::State(const ModelConfig& model_config, const EngineOptions& options, Backend& backend_in,
                     Communicator& comm_in)
    : model_cfg(model_config), opt(options), backend(backend_in), comm(comm_in), ledger(backend_in),
      pinned(pinned_options(options, setup_warnings)) {
  check_options(opt);
  plan = std::make_unique<EnginePlan>(model_cfg, opt, EnginePlan::capabilities_of(backend), comm.world_size(), comm.rank());
  check_zero_rules(*plan, backend);
  part = plan->partition();
  topology = NodeTopology::make(comm.world_size(), opt.ranks_per_node > 0 ? opt.ranks_per_node : comm.world_size());
  // NCCL: collectives wait for the kernels before them on the backend's stream.
  groups = std::make_unique<CommGroups>(comm, topology, plan->group_shape(), backend.native_stream());
  model = make_causal_lm(model_cfg, backend, ModelRunOptions{opt.micro_batch, opt.checkpoint_activations});
  ledger.record_external(MemCategory::Activations, model->activation_bytes());
  // The communicators' own working buffers, sized now for the largest call each makes (the plan's
  // largest_calls) and counted where they live: host memory, the backend's own on the CPU backend;
  // NCCL's device buffers as measured at its start.
  const auto [shard_call, group_call] = plan->largest_calls();
  groups->reserve_buffers(shard_call, group_call);
  const uint64_t group_bytes = groups->group_buffer_bytes();
  if (plan->caps().host_memory) {
    ledger.record_external(MemCategory::CommBuffers, comm.buffer_bytes() + comm.device_buffer_bytes() + group_bytes);
  } else {
    ledger.record_host(MemCategory::CommBuffers, comm.buffer_bytes() + group_bytes);
    if (comm.device_buffer_bytes()) ledger.record_external(MemCategory::CommBuffers, comm.device_buffer_bytes());
  }
  if (opt.trace) trace = std::make_unique<Trace>();
  const ZeroOptions& zo = opt.zero;
  z = std::make_unique<ZeroContext>(ZeroContext{backend, groups->shard(), ledger, *part, zo.precision,
                                                zo.comm_precision.value_or(zo.precision),
                                                zo.grad_accum_precision.value_or(zo.precision), trace.get(), {},
                                                groups.get()});
  pool = std::make_unique<UnitBufferPool>(ledger, backend, z->element_bytes());
  if (part->any_staged()) {
    int64_t largest = 1;
    for (int u = 0; u < part->units(); ++u)
      if (part->unit(u).staged()) largest = std::max(largest, part->unit(u).state_len);
    transfer =
        std::make_unique<HostTransfer>(*z, pinned, opt.offload.state.buffer_count, opt.offload.chunk_elems, largest);
  }
  store = std::make_unique<ParamStore>(*z, pinned, transfer.get(), opt.offload.params);
  ReduceOptions reduce = opt.reduce;
  // qgZ: DeepSpeed's block for a matrix is its shorter side; a bucket spans tensors, so it takes the
  // shortest of the model's (GQA's k and v projections where they are narrower than the width).
  reduce.quantized_block = int64_t(QuantizedReduce::block_for_width(model_cfg.shortest_matrix_side()));
  reducer = std::make_unique<GradReducer>(*z, *pool, reduce);
  gatherer = std::make_unique<ParamGatherer>(*z, *pool, *store, opt.gather, model_cfg.tied_embeddings);
  optimizer = std::make_unique<ShardOptimizer>(*z, opt.optimizer, opt.update, opt.sub_group_size, opt.offload.state,
                                               pinned, transfer.get(), *store);
  // Initial values of the range this rank keeps (the whole unit for stages 0–2, its shard for 3).
  set_params(
      [&](int u, std::vector<float>& scratch) {
        const int64_t first = part->gathers_params_for_compute() ? part->shard(u).rank_begin : 0;
        scratch.assign(size_t(part->unit(u).param_len), 0.0f);
        init_unit_params(model->layout(u), opt.seed, first, first + part->unit(u).param_len, scratch.data());
        return static_cast<const float*>(scratch.data());
      },
      true);
  tokens.resize(size_t(opt.micro_batch) * model_cfg.seq_len);
  targets.resize(tokens.size());
  backend.synchronize();
}

void Engine::State::set_params(const std::function<const float*(int, std::vector<float>&)>& fill, bool with_master) {
  std::vector<float> scratch;
  for (int u = 0; u < part->units(); ++u) {
    const float* values = fill(u, scratch);
    store->initialize(u, values);
    if (with_master) optimizer->initialize(u, values + part->unit(u).state_in_param);
  }
  store->finish_initialize();
  if (with_master) optimizer->finish_initialize();
}

void Engine::State::gather_unit(int u, const float* shard, const std::function<void(const float*)>& use) {
  const UnitShard& sh = part->shard(u);
  void* buf = ledger.alloc(MemCategory::CommBuffers, size_t(sh.padded) * 4);
  void* mine = static_cast<char*>(buf) + size_t(sh.rank_begin) * 4;
  try {
    backend.copy_to_device(mine, shard, size_t(sh.shard) * 4);
    z->comm.all_gather(mine, buf, size_t(sh.padded), DType::F32);  // over the ranks the partition spans
    if (plan->caps().host_memory) {
      use(static_cast<const float*>(buf));
    } else {
      std::vector<float> full(size_t(sh.padded));
      backend.copy_to_host(full.data(), buf, full.size() * 4);
      use(full.data());
    }
  } catch (...) {
    ledger.free(buf);
    throw;
  }
  ledger.free(buf);
}

Engine::State::~State() {
  // Collectives still in flight after a failed step finish before their buffers go (the objects'
  // destructors wait); the backend's stream may go before the communicator.
  optimizer.reset();
  gatherer.reset();
  reducer.reset();
}

Engine::Engine(const ModelConfig& model, const EngineOptions& options, Backend& backend, Communicator& comm)
    : s_(std::make_unique<State>(model, options, backend, comm)) {}

Engine::~Engine() = default;

const ShardMap& Engine::shard_map() const { return s_->part->map(); }
const Partition& Engine::partition() const { return *s_->part; }
int Engine::world_rank() const { return s_->comm.rank(); }
int Engine::world_size() const { return s_->comm.world_size(); }
const Trace* Engine::trace() const { return s_->trace.get(); }
const MemoryLedger& Engine::ledger() const { return s_->ledger; }
void Engine::count_host_memory(MemCategory c, uint64_t bytes) { s_->ledger.record_host(c, bytes); }
const std::vector<std::string>& Engine::setup_warnings() const { return s_->setup_warnings; }
const EngineOptions& Engine::options() const { return s_->opt; }
int64_t Engine::applied_steps() const { return s_->optimizer->counters().applied; }
int64_t Engine::params() const { return s_->part->map().total_numel(); }
uint64_t Engine::expected_comm_bytes_per_step() const { return s_->part->expected_comm_bytes_per_step(s_->z->element_bytes()); }

bool Engine::quantizes_gradients() const { return s_->reducer->quantizes(); }
int64_t Engine::quantized_gradient_block() const { return int64_t(s_->reducer->quantized_block()); }

StepComm Engine::step_comm_next() const { return s_->optimizer->step_comm(); }

CompressedOptimizer* Engine::compressed_optimizer() { return s_->optimizer->compressed(); }

LinkBytes Engine::expected_link_bytes_per_step(StepComm comm) const {
  QuantizedTraffic qgz;
  if (s_->reducer->quantizes()) {
    qgz.on = true;
    qgz.wire = s_->reducer->quantized_wire_bytes();
    qgz.exact_elements_per_micro_step = s_->reducer->exact_elements_per_micro_step();
  }
  return s_->plan->expected_link_bytes_per_step(*s_->groups, s_->z->element_bytes(), qgz,
                                                is_compressed(s_->opt.optimizer.type) ? comm : StepComm::Exact);
}

const NodeTopology& Engine::topology() const { return s_->topology; }
int64_t Engine::grad_buckets() const { return int64_t(s_->reducer->buckets().size()); }
int64_t Engine::param_sync_buckets() const { return int64_t(s_->gatherer->sync_buckets().size()); }

Engine::EvalSums Engine::evaluate(const BatchFn& fill, int micro_steps) {
  State& s = *s_;
  double loss_sum = 0, tokens = 0;
  for (int m = 0; m < micro_steps; ++m) {
    fill(m, s.tokens.data(), s.targets.data());
    s.model->set_batch(s.tokens.data(), s.targets.data(), s.opt.micro_batch, s.model_cfg.seq_len, 0.0f);
    s.forward_walk();
    loss_sum += s.model->loss_sum();
    tokens += double(s.model->valid_targets());
  }
  s.gatherer->release_all();
  const std::vector<double> per_rank = allgather_doubles(*s.z, {loss_sum, tokens});
  EvalSums out;
  for (size_t r = 0; r + 1 < per_rank.size(); r += 2) {
    out.loss_sum += per_rank[r];
    out.tokens += int64_t(per_rank[r + 1]);
  }
  return out;
}

void Engine::for_each_full_master(const std::function<void(int, const float*, int64_t)>& each) {
  State& s = *s_;
  const Partition& p = *s.part;
  std::vector<float> scratch;
  for (int u = 0; u < p.units(); ++u) {
    const float* master = s.optimizer->master_on_host(u, scratch);
    const int64_t numel = p.shard(u).numel;
    if (!p.all_reduces_grads() && p.world_size() > 1)  // the unit from every rank's master shard
      s.gather_unit(u, master, [&](const float* full) { each(u, full, numel); });
    else
      each(u, master, numel);
  }
}

const ModelConfig& Engine::model_config() const { return s_->model_cfg; }

ParamSummary Engine::param_summary() {
  ParamSummary out;
  uint64_t h = 1469598103934665603ull;  // FNV-1a 64 offset basis
  double sq = 0;
  for_each_full_master([&](int, const float* values, int64_t numel) {
    for (int64_t i = 0; i < numel; ++i) {
      uint32_t bits;
      std::memcpy(&bits, &values[i], 4);
      for (int b = 0; b < 4; ++b) {
        h ^= (bits >> (8 * b)) & 0xffu;
        h *= 1099511628211ull;  // FNV prime
      }
      sq += double(values[i]) * double(values[i]);
    }
    out.count += numel;
  });
  out.checksum = h;
  out.l2 = std::sqrt(sq);
  return out;
}

Engine::Counters Engine::counters() const {
  const State& s = *s_;
  const UpdateCounters u = s.optimizer->counters();
  return Counters{s.steps, u.applied, u.skipped, u.scaler};
}

void Engine::restore_counters(const Counters& c) {
  State& s = *s_;
  s.steps = c.steps;
  s.optimizer->restore_counters(UpdateCounters{c.applied, c.skipped, c.scaler});
}

double Engine::next_lr() const {
  return s_->optimizer->next_lr();
}

bool Engine::has_state(StateArray a) const { return s_->optimizer->has_state(a); }
void Engine::read_state(StateArray a, int u, int64_t begin, int64_t n, float* out) {
  s_->optimizer->read_state(a, u, begin, n, out);
}
void Engine::write_state(StateArray a, int u, int64_t begin, int64_t n, const float* in) {
  s_->optimizer->write_state(a, u, begin, n, in);
}

float* Engine::host_state(StateArray a, int u, int64_t begin, int64_t n) {
  return s_->optimizer->host_state(a, u, begin, n);
}

void Engine::params_from_master() {
  State& s = *s_;
  const Partition& p = *s.part;
  s.gatherer->release_all();  // gathered copies of the old values
  std::vector<float> staged;  // a master that is not in host memory (NVMe, a device update)
  s.set_params(
      [&](int u, std::vector<float>& scratch) {
        const float* master = s.optimizer->master_on_host(u, staged);
        if (!p.gathers_params_after_update()) return master;  // stages 0 and 3: the master covers what is kept
        const size_t kept = size_t(p.unit(u).param_len);    // stages 1–2 keep the full unit, the master its shard
        scratch.resize(kept);
        s.gather_unit(u, master, [&](const float* full) { std::copy(full, full + kept, scratch.data()); });
        return static_cast<const float*>(scratch.data());
      },
      false);
  s.backend.synchronize();
}

}  // namespace zt
