// EnginePlan: the partition built once from the model's units, and every figure the run needs
// before it allocates computed from it and the options.
#include "runtime/engine/engine_plan.h"

#include <algorithm>

#include "runtime/model/unit_layout.h"
#include "runtime/zero/compressed_optimizer.h"
#include "runtime/zero/quantized_gather.h"
#include "base/stage_traits.h"

namespace zt {

namespace {

std::vector<UnitSpec> unit_specs(const std::vector<UnitLayout>& layouts) {
  std::vector<UnitSpec> specs;
  for (const auto& l : layouts) {
    UnitSpec s{l.name, l.numel, {}};
    for (const auto& t : l.tensors) s.tensors.push_back({t.name, t.offset, t.numel, int(t.shape.size())});
    specs.push_back(std::move(s));
  }
  return specs;
}

PartitionConfig partition_config(const EngineOptions& o, const BackendCaps& caps, int world_size, int rank) {
  PartitionConfig pc;
  static_cast<ZeroOptions&>(pc) = o.zero;
  // MiCS: the partition spans one shard group of mics_shard_size consecutive ranks.
  const bool mics = stage_traits(o.zero.stage).gathers_params() && o.zero.mics_shard_size > 0 && world_size > 1;
  pc.world_size = mics ? o.zero.mics_shard_size : world_size;
  pc.rank = rank % pc.world_size;
  pc.alignment = o.shard_alignment;
  pc.optimizer = o.optimizer.type;
  pc.sgd_momentum = o.optimizer.momentum != 0.0;
  pc.backend_is_host = caps.host_memory;
  return pc;
}

CommGroupShape group_shape_of(const EngineOptions& o) {
  CommGroupShape shape;
  if (stage_traits(o.zero.stage).gathers_params()) {
    shape.mics_shard_size = o.zero.mics_shard_size;
    shape.mics_hierarchical = o.gather.mics_hierarchical;
    shape.hpz_partition_size = int(o.gather.hpz_partition_size);
    shape.quantized_gradients = o.reduce.quantized_gradients;
  }
  return shape;
}

}  // namespace

BackendCaps EnginePlan::capabilities_of(Backend& b) {
  BackendCaps caps;
  caps.compute = b.act_dtype();
  caps.host_memory = b.native_stream() == nullptr && b.act_dtype() == DType::F32;
  caps.other_precisions = b.act_dtype() == DType::F32;
  return caps;
}

EnginePlan::EnginePlan(const ModelConfig& model, const EngineOptions& options, const BackendCaps& caps, int world_size,
                       int rank)
    : model_(model), opt_(options), caps_(caps), world_size_(world_size), rank_(rank), shape_(group_shape_of(options)),
      part_(std::make_shared<Partition>(unit_specs(build_unit_layouts(model)),
                                        partition_config(options, caps, world_size, rank))) {}

ZeroOptionSet EnginePlan::zero_option_set() const {
  ZeroOptionSet zs;
  static_cast<ZeroOptions&>(zs) = opt_.zero;
  zs.optimizer = opt_.optimizer.type;
  zs.param_buffer_size = opt_.offload.params.buffer_size;
  for (int u = 0; u < part_->units(); ++u) zs.largest_param_shard = std::max(zs.largest_param_shard, part_->unit(u).param_len);
  return zs;
}

std::vector<ZeroRule> EnginePlan::broken_rules() const { return check_zero_options(zero_option_set(), caps_); }

std::pair<uint64_t, uint64_t> EnginePlan::largest_calls() const {
  const ShardMap& map = part_->map();
  return {uint64_t(map.total_numel()) * 4, uint64_t(std::max(map.max_unit_padded(), map.shard_numel())) * 4};
}

UnitBufferWalk EnginePlan::unit_buffer_walk() const {
  const ShardMap& map = part_->map();
  UnitBufferWalk walk;
  for (int u = 0; u < map.units(); ++u) {
    walk.padded.push_back(map.shard(u).padded);
    walk.numel.push_back(map.shard(u).numel);
  }
  walk.stage = opt_.zero.stage;
  walk.micro_steps = opt_.grad_accum;
  walk.reduce = opt_.reduce;
  walk.ranks = map.world_size();
  walk.gather = opt_.gather;
  walk.tied_head = model_.tied_embeddings;
  return walk;
}

uint64_t EnginePlan::unit_buffer_bytes(size_t element_bytes) const {
  // Between steps, when ranks hold master shards, the checksum, the export and a checkpoint load
  // gather one unit at a time in fp32 beside the pool (Engine::State::gather_unit).
  const int ranks = partition_ranks();
  const bool sharded_master = part_->traits().shards_optimizer;  // Partition::all_reduces_grads() is false
  const uint64_t gather_scratch = sharded_master && ranks > 1 ? uint64_t(part_->map().max_unit_padded()) * 4 : 0;
  return uint64_t(unit_buffer_peak_elements(unit_buffer_walk())) * element_bytes + gather_scratch;
}

uint64_t EnginePlan::comm_buffer_bytes(const Communicator& world) const {
  const auto [shard_call, group_call] = largest_calls();
  return CommGroups::planned_buffer_bytes(world, shape_, shard_call, group_call);
}

std::vector<int64_t> EnginePlan::tensor_sizes() const {
  std::vector<int64_t> sizes;
  for (int u = 0; u < part_->units(); ++u)
    for (const TensorSpec& t : part_->map().unit(u).tensors) sizes.push_back(t.size);
  return sizes;
}

uint64_t EnginePlan::optimizer_extra_bytes() const {
  return CompressedOptimizer::extra_bytes_for(opt_.optimizer.type, tensor_sizes(), world_size_);
}

uint64_t EnginePlan::checkpoint_snapshot_bytes() const {
  if (rank_ >= partition_ranks()) return 0;  // EngineCheckpoint's owned ranges: none
  int64_t owned = 0;
  for (const UnitRange& r : part_->owned_ranges()) owned += r.n;
  const size_t arrays = state_arrays_for(opt_.optimizer.type, opt_.optimizer.momentum != 0.0).size();
  return uint64_t(owned) * arrays * 4 +
         CompressedOptimizer::rank_array_bytes_for(opt_.optimizer.type, tensor_sizes(), world_size_);  // + this rank's own arrays
}

std::vector<ElementRange> EnginePlan::checkpoint_needed_ranges() const {
  std::vector<ElementRange> out;
  for (const UnitRange& r : part_->needed_ranges())
    if (r.n > 0) out.push_back({r.unit, r.begin, r.n});
  return out;
}

LinkBytes EnginePlan::expected_link_bytes_per_step(const CommGroups& groups, size_t es, const QuantizedTraffic& qgz,
                                                   StepComm comm) const {
  const Partition& p = *part_;
  // The partition's volumes run over the shard group (the world unless MiCS).
  Partition::CommVolumes v = p.expected_comm_volumes_per_step(es);
  const int S = p.world_size(), N = world_size_, accum = opt_.grad_accum;
  // Stages 2–3 reduce every micro-step (the partition's volumes are one micro-step's).
  if (p.reduces_each_micro_step())
    for (CommOp op : {CommOp::ReduceScatter, CommOp::AllReduce}) v.bytes[int(op)] *= uint64_t(accum);
  // Stage 3's gathers as the gather schedule issues them over every micro-step (the tied head's,
  // persistence's and reuse's differences from 2Ψ included; with hpZ, what comes from the secondary
  // copy goes over the groups; with MiCS's hierarchical gather, a 1/n part of each across nodes,
  // then the whole unit inside each node).
  uint64_t on[kCommRoleCount][kCommOpCount] = {};
  if (p.gathers_params_for_compute() && S > 1) {
    UnitBufferWalk walk = unit_buffer_walk();
    if (!groups.secondary()) walk.gather.hpz_partition_size = 1;
    const GatherOptions& go = walk.gather;
    const UnitGatherVolumes g = unit_gather_elements_per_step(walk);
    uint64_t primary = uint64_t(g.primary) * es, secondary = uint64_t(g.secondary) * es;
    if (go.quantized_weights) {  // qwZ: each call's int8 levels and fp32 scales; persistent units exact
      primary = secondary = 0;
      for (int u = 0; u < p.units(); ++u) {
        const size_t P = size_t(p.shard(u).padded);
        const bool q = go.quantizes_gather_of(p.shard(u).numel);
        primary += uint64_t(g.primary_calls[size_t(u)]) * (q ? QuantizedGather::wire_bytes(P, S).total() : P * es);
        secondary += uint64_t(g.secondary_calls[size_t(u)]) *
                     (q ? QuantizedGather::wire_bytes(P, int(go.hpz_partition_size)).total() : P * es);
      }
    }
    if (go.mics_hierarchical && groups.mics() && groups.cross()) {
      v.bytes[int(CommOp::AllGather)] = 0;
      on[int(CommRole::Cross)][int(CommOp::AllGather)] = primary / uint64_t(groups.node()->world_size());
      on[int(CommRole::Node)][int(CommOp::AllGather)] = primary;
    } else {
      v.bytes[int(CommOp::AllGather)] = primary;
    }
    on[int(CommRole::Secondary)][int(CommOp::AllGather)] = secondary;
  }
  if (qgz.on) {  // qgZ: the 1-D tensors reduce-scattered exactly, the rest in two all-to-alls
    v.bytes[int(CommOp::ReduceScatter)] = qgz.exact_elements_per_micro_step * es * uint64_t(accum);
    on[int(CommRole::Node)][int(CommOp::AllToAll)] = qgz.wire.intra() * uint64_t(accum);
    on[int(CommRole::Cross)][int(CommOp::AllToAll)] = qgz.wire.inter() * uint64_t(accum);
  }
  if (groups.replica()) {  // MiCS: every gradient shard across the replicas, once a step
    uint64_t shard_elems = 0;
    for (int u = 0; u < p.units(); ++u) shard_elems += uint64_t(p.unit(u).grad_len);
    on[int(CommRole::Replica)][int(CommOp::AllReduce)] = shard_elems * es;
  }
  if (S > 1 && p.norm_ranks().size() == 1) v.bytes[int(CommOp::AllGather)] += 8ull * uint64_t(S);  // the norm's partials
  if (comm != StepComm::Exact && S > 1) {  // no gradient all-reduce; the overflow flag and norm (16 bytes a rank)
    v.bytes[int(CommOp::AllReduce)] = 0;  // and, compressing, each piece's part of one compressed call
    if (comm == StepComm::Compressed)
      for (int64_t n : CompressedOptimizer::call_sizes_for(opt_.optimizer.type, tensor_sizes())) {
        const auto c = CompressedAllReduce::call_bytes(size_t(n), S);
        v.bytes[int(CommOp::AllToAll)] += c.all_to_all;
        v.bytes[int(CommOp::AllGather)] += c.all_gather;
      }
    v.bytes[int(CommOp::AllGather)] += 16ull * uint64_t(S);
  }
  if (N > 1) on[int(CommRole::World)][int(CommOp::AllGather)] += 8ull * uint64_t(N);  // the step's loss, one double a rank
  LinkBytes b = groups.split(CommRole::Shard, v.bytes);
  for (int r = 0; r < kCommRoleCount; ++r)
    if (r != int(CommRole::Shard)) b += groups.split(CommRole(r), on[r]);
  return b;
}

}  // namespace zt
