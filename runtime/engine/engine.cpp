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

// What this backend can run, as the ZeRO rules read it: the CPU backend has no native stream (its
// memory is the host's) and stores fp32 (so other precisions are emulated by rounding).
BackendCaps capabilities_of(Backend& b) {
  BackendCaps caps;
  caps.compute = b.act_dtype();
  caps.host_memory = b.native_stream() == nullptr && b.act_dtype() == DType::F32;
  caps.other_precisions = b.act_dtype() == DType::F32;
  return caps;
}

// The engine's own preconditions, and the ZeRO rules (runtime/zero/zero_rules.h) that config
// validation reports with their keys: what reaches a refusal here is a caller's mistake.
void check_options(const EngineOptions& o) {
  if (o.micro_batch < 1 || o.grad_accum < 1) throw std::invalid_argument("engine: micro_batch and grad_accum must be >= 1");
  if (o.reduce.bucket_elems < 1 || o.gather.allgather_bucket_size < 1)
    throw std::invalid_argument("engine: reduce_bucket_size and allgather_bucket_size must be >= 1 element");
  if (o.offload.chunk_elems < 1) throw std::invalid_argument("engine: offload chunk_elems must be >= 1");
}

void check_zero_rules(const EngineOptions& o, Backend& b, const Partition& part) {
  ZeroOptionSet zs;
  static_cast<ZeroOptions&>(zs) = o.zero;
  zs.optimizer = o.optimizer.type;
  zs.param_buffer_size = o.offload.params.buffer_size;
  for (int u = 0; u < part.units(); ++u) zs.largest_param_shard = std::max(zs.largest_param_shard, part.unit(u).param_len);
  const std::vector<ZeroRule> broken = check_zero_options(zs, capabilities_of(b));
  if (broken.empty()) return;
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

std::vector<UnitSpec> unit_specs(const std::vector<UnitLayout>& layouts) {
  std::vector<UnitSpec> specs;
  for (const auto& l : layouts) {
    UnitSpec s{l.name, l.numel, {}};
    for (const auto& t : l.tensors) s.tensors.push_back({t.name, t.offset, t.numel, int(t.shape.size())});
    specs.push_back(std::move(s));
  }
  return specs;
}

PartitionConfig partition_config(const EngineOptions& o, Backend& b, const Communicator& c) {
  PartitionConfig pc;
  static_cast<ZeroOptions&>(pc) = o.zero;
  // MiCS: the partition spans one shard group of mics_shard_size consecutive ranks.
  pc.world_size = partition_ranks(o, c.world_size());
  pc.rank = c.rank() % pc.world_size;
  pc.alignment = o.shard_alignment;
  pc.optimizer = o.optimizer.type;
  pc.sgd_momentum = o.optimizer.momentum != 0.0;
  pc.backend_is_host = capabilities_of(b).host_memory;
  return pc;
}

CommGroupShape group_shape(const EngineOptions& o) {
  CommGroupShape shape;
  if (o.zero.stage == 3) {
    shape.mics_shard_size = o.zero.mics_shard_size;
    shape.mics_hierarchical = o.gather.mics_hierarchical;
    shape.hpz_partition_size = int(o.gather.hpz_partition_size);
    shape.quantized_gradients = o.reduce.quantized_gradients;
  }
  return shape;
}

// The largest call of the shard group (the model in 4-byte elements; a padded call runs as one chunk
// more) and of the other groups (a unit, or MiCS's replica all-reduce of every gradient shard).
std::pair<uint64_t, uint64_t> largest_calls(const ShardMap& map) {
  return {uint64_t(map.total_numel()) * 4, uint64_t(std::max(map.max_unit_padded(), map.shard_numel())) * 4};
}

}  // namespace

int partition_ranks(const EngineOptions& o, int world_size) {
  const bool mics = o.zero.stage == 3 && o.zero.mics_shard_size > 0 && world_size > 1;
  return mics ? o.zero.mics_shard_size : world_size;
}

uint64_t planned_comm_buffer_bytes(const ModelConfig& model, const EngineOptions& o, Backend& b,
                                   const Communicator& comm) {
  const Partition part(unit_specs(build_unit_layouts(model)), partition_config(o, b, comm));
  const auto [shard_call, group_call] = largest_calls(part.map());
  return CommGroups::planned_buffer_bytes(comm, group_shape(o), shard_call, group_call);
}

uint64_t planned_checkpoint_snapshot_bytes(const ModelConfig& model, const EngineOptions& o, Backend& b,
                                           const Communicator& comm) {
  const Partition part(unit_specs(build_unit_layouts(model)), partition_config(o, b, comm));
  if (comm.rank() >= part.world_size()) return 0;  // EngineCheckpoint's owned ranges: none
  int64_t owned = 0;
  for (const UnitRange& r : part.owned_ranges()) owned += r.n;
  const size_t arrays = state_arrays_for(o.optimizer.type, o.optimizer.momentum != 0.0).size();
  return uint64_t(owned) * arrays * 4;
}

std::vector<ElementRange> checkpoint_needed_ranges(const ModelConfig& model, const EngineOptions& o, Backend& b,
                                                   const Communicator& c) {
  const Partition part(unit_specs(build_unit_layouts(model)), partition_config(o, b, c));
  std::vector<ElementRange> out;
  for (const UnitRange& r : part.needed_ranges())
    if (r.n > 0) out.push_back({r.unit, r.begin, r.n});
  return out;
}

// One step's walk for the buffer plan and the communication predictor.
static UnitBufferWalk unit_buffer_walk(const ShardMap& map, const ModelConfig& model, const EngineOptions& o) {
  UnitBufferWalk walk;
  for (int u = 0; u < map.units(); ++u) {
    walk.padded.push_back(map.shard(u).padded);
    walk.numel.push_back(map.shard(u).numel);
  }
  walk.stage = o.zero.stage;
  walk.micro_steps = o.grad_accum;
  walk.reduce = o.reduce;
  walk.ranks = map.world_size();
  walk.gather = o.gather;
  walk.tied_head = model.tied_embeddings;
  return walk;
}

uint64_t planned_unit_buffer_bytes(const ModelConfig& model, const EngineOptions& o, int world_size,
                                   size_t element_bytes) {
  const ShardMap map(unit_specs(build_unit_layouts(model)), world_size, 0, o.shard_alignment);
  const UnitBufferWalk walk = unit_buffer_walk(map, model, o);
  // Between steps, when ranks hold shards, the checksum, the export and a checkpoint load gather one
  // unit at a time in fp32 beside the pool (State::gather_unit).
  const bool sharded_master = stage_traits(o.zero.stage).shards_optimizer;  // Partition::all_reduces_grads() is false
  const uint64_t gather_scratch = sharded_master && world_size > 1 ? uint64_t(map.max_unit_padded()) * 4 : 0;
  return uint64_t(unit_buffer_peak_elements(walk)) * element_bytes + gather_scratch;
}

Engine::State::State(const ModelConfig& model_config, const EngineOptions& options, Backend& backend_in,
                     Communicator& comm_in)
    : model_cfg(model_config), opt(options), backend(backend_in), comm(comm_in), ledger(backend_in),
      pinned(pinned_options(options, setup_warnings)) {
  check_options(opt);
  topology = NodeTopology::make(comm.world_size(), opt.ranks_per_node > 0 ? opt.ranks_per_node : comm.world_size());
  // NCCL: collectives wait for the kernels before them on the backend's stream.
  groups = std::make_unique<CommGroups>(comm, topology, group_shape(opt), backend.native_stream());
  model = make_causal_lm(model_cfg, backend, ModelRunOptions{opt.micro_batch, opt.checkpoint_activations});
  ledger.record_external(MemCategory::Activations, model->activation_bytes());
  part = std::make_unique<Partition>(unit_specs(model->layouts()), partition_config(opt, backend, comm));
  check_zero_rules(opt, backend, *part);
  // The communicators' own working buffers, sized now for the largest call each makes
  // (largest_calls) and counted where they live: host memory, the backend's own on the CPU backend;
  // NCCL's device buffers as measured at its start.
  const auto [shard_call, group_call] = largest_calls(part->map());
  groups->reserve_buffers(shard_call, group_call);
  const uint64_t group_bytes = groups->group_buffer_bytes();
  if (capabilities_of(backend).host_memory) {
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
    if (capabilities_of(backend).host_memory) {
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

LinkBytes Engine::expected_link_bytes_per_step() const {
  const Partition& p = *s_->part;
  const CommGroups& groups = *s_->groups;
  const size_t es = s_->z->element_bytes();
  // The partition's volumes run over the shard group (the world unless MiCS).
  Partition::CommVolumes v = p.expected_comm_volumes_per_step(es);
  const int S = p.world_size(), N = s_->comm.world_size(), accum = s_->opt.grad_accum;
  // Stages 2–3 reduce every micro-step (the partition's volumes are one micro-step's).
  if (p.reduces_each_micro_step())
    for (CommOp op : {CommOp::ReduceScatter, CommOp::AllReduce}) v.bytes[int(op)] *= uint64_t(accum);
  // Stage 3's gathers as the gather schedule issues them over every micro-step (the tied head's,
  // persistence's and reuse's differences from 2Ψ included; with hpZ, what comes from the secondary
  // copy goes over the groups; with MiCS's hierarchical gather, a 1/n part of each across nodes,
  // then the whole unit inside each node).
  uint64_t on[kCommRoleCount][kCommOpCount] = {};
  if (p.stage() == 3 && S > 1) {
    EngineOptions o = s_->opt;
    if (!groups.secondary()) o.gather.hpz_partition_size = 1;
    const UnitGatherVolumes g = unit_gather_elements_per_step(unit_buffer_walk(p.map(), s_->model_cfg, o));
    uint64_t primary = uint64_t(g.primary) * es, secondary = uint64_t(g.secondary) * es;
    if (o.gather.quantized_weights) {  // qwZ: each call's int8 levels and fp32 scales; persistent units exact
      primary = secondary = 0;
      for (int u = 0; u < p.units(); ++u) {
        const size_t P = size_t(p.shard(u).padded);
        const bool q = o.gather.quantizes_gather_of(p.shard(u).numel);
        primary += uint64_t(g.primary_calls[size_t(u)]) * (q ? QuantizedGather::wire_bytes(P, S).total() : P * es);
        secondary += uint64_t(g.secondary_calls[size_t(u)]) *
                     (q ? QuantizedGather::wire_bytes(P, int(o.gather.hpz_partition_size)).total() : P * es);
      }
    }
    if (o.gather.mics_hierarchical && groups.mics() && groups.cross()) {
      v.bytes[int(CommOp::AllGather)] = 0;
      on[int(CommRole::Cross)][int(CommOp::AllGather)] = primary / uint64_t(groups.node()->world_size());
      on[int(CommRole::Node)][int(CommOp::AllGather)] = primary;
    } else {
      v.bytes[int(CommOp::AllGather)] = primary;
    }
    on[int(CommRole::Secondary)][int(CommOp::AllGather)] = secondary;
  }
  if (s_->reducer->quantizes()) {  // qgZ: the 1-D tensors reduce-scattered exactly, the rest in two all-to-alls
    const QuantizedReduce::WireBytes w = s_->reducer->quantized_wire_bytes();
    v.bytes[int(CommOp::ReduceScatter)] = s_->reducer->exact_elements_per_micro_step() * es * uint64_t(accum);
    on[int(CommRole::Node)][int(CommOp::AllToAll)] = w.intra() * uint64_t(accum);
    on[int(CommRole::Cross)][int(CommOp::AllToAll)] = w.inter() * uint64_t(accum);
  }
  if (groups.replica()) {  // MiCS: every gradient shard across the replicas, once a step
    uint64_t shard_elems = 0;
    for (int u = 0; u < p.units(); ++u) shard_elems += uint64_t(p.unit(u).grad_len);
    on[int(CommRole::Replica)][int(CommOp::AllReduce)] = shard_elems * es;
  }
  if (S > 1 && p.norm_ranks().size() == 1) v.bytes[int(CommOp::AllGather)] += 8ull * uint64_t(S);  // the norm's partials
  if (N > 1) on[int(CommRole::World)][int(CommOp::AllGather)] += 8ull * uint64_t(N);  // the step's loss, one double a rank
  LinkBytes b = groups.split(CommRole::Shard, v.bytes);
  for (int r = 0; r < kCommRoleCount; ++r)
    if (r != int(CommRole::Shard)) b += groups.split(CommRole(r), on[r]);
  return b;
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
