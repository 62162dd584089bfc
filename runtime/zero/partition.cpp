// Partition: the per-unit decisions of a stage and an offload choice, computed once.
#include "runtime/zero/partition.h"

#include <stdexcept>
#include <string>

namespace zt {

namespace {

// offload_optimizer's units: all of them, or with ratio < 1 whole units in walk order until the
// offloaded share of this rank's optimizer state reaches the ratio.
std::vector<char> offloaded_units(const PartitionConfig& c, const std::vector<int64_t>& state_len) {
  std::vector<char> out(state_len.size(), 0);
  if (c.offload_optimizer == OffloadDevice::None) return out;
  int64_t total = 0, taken = 0;
  for (int64_t n : state_len) total += n;
  for (size_t u = 0; u < out.size(); ++u) {
    out[u] = c.offload_ratio >= 1.0 || double(taken) < c.offload_ratio * double(total);
    if (out[u]) taken += state_len[u];
  }
  return out;
}

}  // namespace

Partition::Partition(std::vector<UnitSpec> units, const PartitionConfig& config) : cfg_(config) {
  if (!is_zero_stage(config.stage))
    throw std::invalid_argument("Partition: stage must be 0..3, got " + std::to_string(config.stage));
  traits_ = stage_traits(config.stage);
  for (int q = 0; q < config.world_size; ++q) maps_.emplace_back(units, config.world_size, q, config.alignment);
  const ShardMap& own = map();
  std::vector<int64_t> state_lens;
  for (int u = 0; u < own.units(); ++u) {
    const UnitShard& sh = own.shard(u);
    UnitPart part;
    part.param_len = traits_.shards_params ? sh.shard : sh.padded;
    part.grad_len = traits_.shards_grads ? sh.shard : sh.padded;
    part.state_len = traits_.shards_optimizer ? sh.shard : sh.padded;
    part.state_valid = traits_.shards_optimizer ? sh.valid : sh.numel;
    part.state_begin = traits_.shards_optimizer ? sh.rank_begin : 0;
    part.state_in_grad = traits_.full_grads_with_sharded_state() ? sh.rank_begin : 0;
    part.state_in_param = traits_.gathers_updated_shards() ? sh.rank_begin : 0;
    if (traits_.shards_params && config.offload_param == OffloadDevice::CPU) part.param = ParamHome::Host;
    if (traits_.shards_params && config.offload_param == OffloadDevice::NVMe) part.param = ParamHome::Nvme;
    state_lens.push_back(part.state_len);
    parts_.push_back(part);
  }
  const std::vector<char> offloaded = offloaded_units(config, state_lens);
  const bool adam = is_adam(config.optimizer);
  for (size_t u = 0; u < parts_.size(); ++u) {
    UnitPart& part = parts_[u];
    if (offloaded[u])
      part.state = config.offload_optimizer == OffloadDevice::NVMe ? StateHome::Nvme : StateHome::Host;
    else if (!config.backend_is_host && !adam)
      part.state = StateHome::Host;  // a GPU backend runs only Adam/AdamW itself: SGD and Lamb step on the host
    part.device_update = !config.backend_is_host && part.state == StateHome::Backend;
    any_staged_ = any_staged_ || part.staged();
    any_device_ = any_device_ || part.device_update;
  }
  aliases_ = config.backend_is_host && config.precision == DType::F32 && config.offload_param == OffloadDevice::None &&
             !any_staged_;
}

std::vector<int> Partition::norm_ranks() const {
  std::vector<int> r;
  if (all_reduces_grads())
    for (int q = 0; q < world_size(); ++q) r.push_back(q);
  else
    r.push_back(rank());
  return r;
}

std::vector<UnitRange> Partition::norm_ranges(int q) const {
  std::vector<UnitRange> out;
  const ShardMap& mq = map_of(q);
  for (int u = 0; u < units(); ++u) {
    const UnitShard& sh = mq.shard(u);
    // Stage 0's state arrays hold the whole unit: rank q's part starts at its shard. Otherwise the
    // arrays are this rank's shard (q == rank).
    out.push_back({u, all_reduces_grads() ? sh.rank_begin : 0, sh.valid});
  }
  return out;
}

std::vector<UnitRange> Partition::owned_ranges() const {
  std::vector<UnitRange> out;
  for (int u = 0; u < units(); ++u) out.push_back({u, shard(u).rank_begin, shard(u).valid});
  return out;
}

std::vector<UnitRange> Partition::needed_ranges() const {
  if (!all_reduces_grads()) return owned_ranges();
  std::vector<UnitRange> out;
  for (int u = 0; u < units(); ++u) out.push_back({u, 0, shard(u).numel});
  return out;
}

Footprint Partition::footprint(size_t wb) const {
  Footprint f;
  const int arrays = optimizer_state_arrays(cfg_.optimizer, cfg_.sgd_momentum);
  for (const UnitPart& p : parts_) {
    const uint64_t pb = uint64_t(p.param_len) * wb;
    if (p.param == ParamHome::Backend) f.params += pb;
    else if (p.param == ParamHome::Host) f.host_params += pb;
    else f.nvme += pb;
    f.grads += uint64_t(p.grad_len) * wb;
    const uint64_t master = aliases_ ? 0 : uint64_t(p.state_len) * 4;
    const uint64_t moments = uint64_t(p.state_len) * 4 * uint64_t(arrays);
    switch (p.state) {
      case StateHome::Backend:
        f.master += master;
        f.optimizer += moments;
        break;
      case StateHome::Host:
        f.host_master += master;
        f.host_optimizer += moments;
        break;
      case StateHome::Nvme:
        f.nvme += uint64_t(p.state_valid) * 4 * uint64_t(arrays + 1);
        break;
    }
  }
  return f;
}

Partition::CommVolumes Partition::expected_comm_volumes_per_step(size_t es) const {
  const uint64_t full = uint64_t(map().total_padded()) * es;
  CommVolumes v;
  if (traits_.all_reduces_grads()) {  // all-reduce: algorithm bytes = buffer bytes (bus traffic 2(n-1)/n of it)
    v.bytes[int(CommOp::AllReduce)] = full;
  } else if (traits_.gathers_params()) {  // all-gather forward + all-gather backward + reduce-scatter
    v.bytes[int(CommOp::AllGather)] = 2 * full;
    v.bytes[int(CommOp::ReduceScatter)] = full;
  } else {  // reduce-scatter + the updated shards' all-gather
    v.bytes[int(CommOp::AllGather)] = full;
    v.bytes[int(CommOp::ReduceScatter)] = full;
  }
  return v;
}

uint64_t Partition::expected_comm_bytes_per_step(size_t es) const {
  uint64_t total = 0;
  for (uint64_t b : expected_comm_volumes_per_step(es).bytes) total += b;
  return total;
}

}  // namespace zt
