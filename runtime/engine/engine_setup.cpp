// Engine set-up: the unit layout and shard map, every per-stage buffer (recorded in the ledger),
// and the deterministic initial parameters, which depend on the seed only, never on stage or W.
#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "runtime/engine/engine_state.h"
#include "runtime/engine/precision_emulation.h"
#include "runtime/model/init.h"

namespace zt {

static void check_options(const EngineOptions& o, const Backend& b) {
  if (o.stage < 0 || o.stage > 3) throw std::invalid_argument("engine: stage must be 0..3, got " + std::to_string(o.stage));
  if (o.micro_batch < 1 || o.grad_accum < 1)
    throw std::invalid_argument("engine: micro_batch and grad_accum must be >= 1");
  if (o.sub_group_size < 1) throw std::invalid_argument("engine: sub_group_size must be >= 1");
  if (b.act_dtype() != DType::F32 && o.precision != DType::BF16)
    throw std::invalid_argument(std::string("engine: the ") + b.name() +
                                " backend computes in bf16; enable bf16 in the config (fp32 and fp16 "
                                "training run on the cpu backend)");
  const bool adam = is_adam(o.optimizer.type);
  if (o.offload.ratio < 1.0) {
    if (o.stage != 3 || o.offload.optimizer != OffloadDevice::CPU)
      throw std::invalid_argument("engine: zero_optimization.offload_optimizer.ratio = " + std::to_string(o.offload.ratio) +
                                  " needs stage 3 and offload_optimizer.device \"cpu\" (stage is " +
                                  std::to_string(o.stage) + ", device " + offload_name(o.offload.optimizer) +
                                  "): remove ratio or change them");
    if (!adam)
      throw std::invalid_argument(std::string("engine: offload_optimizer.ratio < 1 keeps part of the optimizer in "
                                              "device memory, where only Adam/AdamW run; optimizer is ") +
                                  optimizer_type_name(o.optimizer.type) + ": remove ratio or use Adam/AdamW");
  }
  if (o.offload.chunk_elems < 1) throw std::invalid_argument("engine: offload chunk_elems must be >= 1");
  if (b.act_dtype() != DType::F32 &&
      (o.comm_precision.value_or(DType::BF16) != DType::BF16 ||
       o.grad_accum_precision.value_or(DType::BF16) != DType::BF16))
    throw std::invalid_argument(std::string("engine: the ") + b.name() +
                                " backend communicates and accumulates gradients in bf16 only; remove "
                                "communication_data_type / data_types.grad_accum_dtype or set them to \"bf16\"");
}

static std::vector<UnitSpec> unit_specs(const GPT2& model) {
  std::vector<UnitSpec> specs;
  for (const auto& l : model.layouts()) {
    UnitSpec s{l.name, l.numel, {}};
    for (const auto& t : l.tensors) s.tensors.push_back({t.name, t.offset, t.numel});
    specs.push_back(std::move(s));
  }
  return specs;
}

// Host fp32 storage that the ledger counts (master weights, moments, staging): as host memory when
// offload keeps it apart from the backend's, else as backend memory (the CPU backend's own state).
static float* host_floats(std::vector<std::vector<float>>& store, MemoryLedger& ledger, MemCategory c,
                          int64_t n, bool on_host) {
  store.emplace_back(size_t(n), 0.0f);
  if (on_host)
    ledger.record_host(c, uint64_t(n) * 4);
  else
    ledger.record_external(c, uint64_t(n) * 4);
  return store.back().data();
}

// offload_optimizer's units: all of them, or with ratio < 1 whole units in walk order until the
// offloaded share of this rank's optimizer state reaches the ratio.
static std::vector<char> offloaded_units(const EngineOptions& o, const std::vector<int64_t>& state_len) {
  std::vector<char> out(state_len.size(), 0);
  if (o.offload.optimizer == OffloadDevice::None) return out;
  int64_t total = 0, taken = 0;
  for (int64_t n : state_len) total += n;
  for (size_t u = 0; u < out.size(); ++u) {
    out[u] = o.offload.ratio >= 1.0 || double(taken) < o.offload.ratio * double(total);
    if (out[u]) taken += state_len[u];
  }
  return out;
}

Engine::State::State(const ModelConfig& m, const EngineOptions& o, Backend& b, Communicator& c)
    : model_cfg(m), opt(o), backend(b), comm(c), ledger(b) {
  check_options(o, b);
  W = comm.world_size();
  rank = comm.rank();
  comm.set_compute_stream(b.native_stream());  // NCCL: collectives wait for the kernels before them
  model = std::make_unique<GPT2>(m, b, ModelRunOptions{o.micro_batch, o.checkpoint_activations});
  ledger.record_external(MemCategory::Activations, model->activation_bytes());
  U = model->num_units();
  const auto specs = unit_specs(*model);
  map = std::make_unique<ShardMap>(specs, W, rank, o.shard_alignment);
  if (o.stage == 0)
    for (int q = 0; q < W; ++q) rank_maps.push_back(std::make_unique<ShardMap>(specs, W, q, o.shard_alignment));
  es = dtype_size(b.act_dtype());
  cdt = b.act_dtype();
  host_fp32 = b.act_dtype() == DType::F32 && b.native_stream() == nullptr && b.name() == "cpu";
  param_nvme = o.stage == 3 && o.offload.param == OffloadDevice::NVMe;
  param_host = o.stage == 3 && o.offload.param == OffloadDevice::CPU;
  // Where each unit's state goes. On a GPU, Adam runs on the device (the fused multi-tensor kernel)
  // unless the unit is offloaded; offloaded units, SGD and Lamb step on the host, staged. On the
  // CPU backend only offloaded units are staged; the others update backend memory in place.
  {
    std::vector<int64_t> lens;
    for (int u = 0; u < U; ++u) lens.push_back(state_len(u));
    offloaded = offloaded_units(o, lens);
  }
  const bool adam = is_adam(o.optimizer.type);
  for (int u = 0; u < U; ++u) {
    device_adam.push_back(!host_fp32 && !offloaded[u] && adam);
    staged.push_back(host_fp32 ? offloaded[u] : !device_adam[u]);
  }
  if ((param_host || param_nvme) && any(device_adam))
    throw std::invalid_argument(std::string("engine: offload_param on the ") + b.name() +
                                " backend needs the optimizer on the host (it writes the new shard there): set "
                                "offload_optimizer.device to \"cpu\" or \"nvme\" without ratio < 1");
  // With the parameter shard offloaded, or the state staged, the master is not the working copy.
  master_aliases_work = host_fp32 && o.precision == DType::F32 && !param_nvme && !param_host && !any(staged);
  if (param_host) make_pinned();
  const bool needs_v = o.optimizer.type != OptimizerType::SGD;
  const bool needs_m = o.optimizer.type != OptimizerType::SGD || o.optimizer.momentum != 0.0;

  const bool nvme = o.offload.optimizer == OffloadDevice::NVMe;
  if (nvme && o.optimizer.type == OptimizerType::Lamb)
    throw std::invalid_argument("engine: Lamb needs every tensor's state at once; it cannot page it to NVMe");
  std::vector<std::vector<float>> initial_master;  // NVMe without aliasing: written to the swap file
  gathered.resize(U);
  grad_full.assign(U, nullptr);
  std::vector<float> init;
  std::vector<std::vector<float>> initial_shards;  // parameter NVMe offload: written to the swap file
  for (int u = 0; u < U; ++u) {
    const int64_t P = padded(u), S = shard_len(u), L = state_len(u);
    const int64_t work_len = o.stage == 3 ? S : P;
    if (param_host) {  // the shard in pinned host memory
      param_store.push_back(pinned->allocate(size_t(work_len) * es));
      ledger.record_host(MemCategory::Params, size_t(work_len) * es);
      work.push_back(param_store.back().data());
    } else {
      work.push_back(param_nvme ? nullptr : ledger.alloc(MemCategory::Params, size_t(work_len) * es));
    }
    grads.push_back(ledger.alloc(MemCategory::Grads, size_t(o.stage >= 2 ? S : P) * es));
    // Initial values of the range this rank keeps (the whole unit for stages 0–2).
    const int64_t init_begin = o.stage == 3 ? rank_offset(u) : 0;
    init.assign(size_t(work_len), 0.0f);
    init_unit_params(model->layout(u), o.seed, init_begin, init_begin + work_len, init.data());
    const int64_t master_in_init = (o.stage == 1 || o.stage == 2) ? rank_offset(u) : 0;
    if (master_aliases_work) {
      std::memcpy(work[u], init.data(), size_t(work_len) * 4);
      master.push_back(static_cast<float*>(work[u]) + master_in_init);
    } else {
      float* ms = nullptr;
      if (nvme) {
        initial_master.emplace_back(init.begin() + master_in_init, init.begin() + master_in_init + L);
      } else if (device_adam[u]) {
        ms = static_cast<float*>(ledger.alloc(MemCategory::Master, size_t(L) * 4));
        backend.copy_to_device(ms, init.data() + master_in_init, size_t(L) * 4);
      } else {
        ms = host_floats(host_store, ledger, MemCategory::Master, L, staged[u]);
        std::memcpy(ms, init.data() + master_in_init, size_t(L) * 4);
      }
      master.push_back(ms);
      if (param_nvme) {
        initial_shards.push_back(init);
      } else if (param_host) {
        to_act(work[u], init.data(), int64_t(init.size()));
      } else if (host_fp32) {
        round_to_precision(init.data(), init.size(), o.precision);
        std::memcpy(work[u], init.data(), size_t(work_len) * 4);
      } else {
        stage16.resize(std::max(stage16.size(), init.size()));
        for (size_t i = 0; i < init.size(); ++i) stage16[i] = f32_to_bf16_bits(init[i]);
        backend.copy_to_device(work[u], stage16.data(), init.size() * 2);
      }
    }
    grad_host.push_back(!host_fp32 || staged[u] ? host_floats(host_store, ledger, MemCategory::CommBuffers, L, true)
                                                : nullptr);
    auto moment = [&](bool needed) -> float* {
      if (!needed || nvme) return nullptr;
      if (device_adam[u]) return static_cast<float*>(ledger.alloc(MemCategory::Optimizer, size_t(L) * 4));
      return host_floats(host_store, ledger, MemCategory::Optimizer, L, staged[u]);
    };
    moment1.push_back(moment(needs_m));
    moment2.push_back(moment(needs_v));
  }
  // The optimizer walks each unit's real elements (all of them in stage 0, the rank's shard
  // otherwise; never the padding) in sub-groups of at most sub_group_size elements.
  for (int u = 0; u < U; ++u) {
    const int64_t hi = o.stage == 0 ? map->shard(u).numel : map->shard(u).valid;
    for (int64_t a = 0; a < hi; a += o.sub_group_size) subgroups.push_back({u, a, std::min(o.sub_group_size, hi - a)});
  }
  if (any(staged) || !host_fp32) setup_staging();  // on a GPU every unit's gradient comes out for the norm
  // Nothing to page (plain SGD on a master that is the working copy): no swap file at all.
  if (nvme && record_floats(1) > 0) setup_nvme(initial_master);
  if (param_nvme) setup_param_nvme(initial_shards);
  if (o.precision == DType::F16) scaler = std::make_unique<LossScaler>(o.loss_scaler);
  if (o.trace) trace = std::make_unique<Trace>();
  tokens.resize(size_t(o.micro_batch) * m.seq_len);
  targets.resize(tokens.size());
  backend.synchronize();
}

void* Engine::State::acquire_full(int u, bool zero) {
  auto& free_list = pool[padded(u)];
  void* p;
  if (free_list.empty()) {
    p = ledger.alloc(MemCategory::CommBuffers, size_t(padded(u)) * es);  // arrives zeroed
  } else {
    p = free_list.back();
    free_list.pop_back();
    if (zero) backend.zero(p, size_t(padded(u)) * es);
  }
  return p;
}

void Engine::State::release_full(int u, void* p) { pool[padded(u)].push_back(p); }

}  // namespace zt
