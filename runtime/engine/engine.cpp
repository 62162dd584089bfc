// Engine: construction, accessors, evaluation, and the consolidated-parameter summary.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "runtime/engine/engine_state.h"

namespace zt {

Engine::Engine(const ModelConfig& model, const EngineOptions& options, Backend& backend, Communicator& comm)
    : s_(std::make_unique<State>(model, options, backend, comm)) {}

Engine::~Engine() {
  if (!s_) return;
  try {  // collectives still in flight after a failed step must finish before their buffers go
    s_->finish_reductions();
    s_->release_all_gathered();
    s_->comm.set_compute_stream(nullptr);  // the backend's stream may go before the communicator
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zerotrain: rank %d: a collective failed while shutting down: %s\n", s_->rank, e.what());
    std::abort();  // the other ranks cannot be left waiting on a half-finished collective
  }
}

const ShardMap& Engine::shard_map() const { return *s_->map; }
const Trace* Engine::trace() const { return s_->trace.get(); }
const MemoryLedger& Engine::ledger() const { return s_->ledger; }
const EngineOptions& Engine::options() const { return s_->opt; }
int64_t Engine::applied_steps() const { return s_->applied; }
int64_t Engine::params() const { return s_->map->total_numel(); }

uint64_t Engine::expected_comm_bytes_per_step() const {
  const uint64_t full = uint64_t(s_->map->total_padded()) * s_->es;
  switch (s_->opt.stage) {
    case 0: return full;      // all-reduce: algorithm bytes = buffer bytes (bus traffic 2(n-1)/n of it)
    case 3: return 3 * full;  // all-gather forward + all-gather backward + reduce-scatter
    default: return 2 * full; // reduce-scatter + all-gather
  }
}

double Engine::evaluate(const BatchFn& fill, int micro_steps) {
  State& s = *s_;
  double sum = 0;
  for (int m = 0; m < micro_steps; ++m) {
    fill(m, s.tokens.data(), s.targets.data());
    s.model->set_batch(s.tokens.data(), s.targets.data(), s.opt.micro_batch, s.model_cfg.seq_len, 0.0f);
    s.forward_walk();
    sum += s.model->loss();
  }
  s.release_all_gathered();
  double total = 0;
  for (double l : s.allgather_doubles({sum})) total += l;
  return total / (double(micro_steps) * s.W);
}

const float* Engine::State::host_master(int u, std::vector<float>& tmp) {
  if (!device_adam[u]) return master[u];
  tmp.resize(size_t(state_len(u)));
  backend.copy_to_host(tmp.data(), master[u], tmp.size() * 4);
  return tmp.data();
}

ParamSummary Engine::param_summary() {
  State& s = *s_;
  ParamSummary out;
  uint64_t h = 1469598103934665603ull;  // FNV-1a 64 offset basis
  double sq = 0;
  std::vector<float> full;
  // With NVMe offload (and no aliasing) the master weights live in the swap file.
  const bool paged = s.pipeline && !s.master_aliases_work;
  const std::vector<std::vector<float>> paged_master = paged ? s.read_masters() : std::vector<std::vector<float>>{};
  for (int u = 0; u < s.U; ++u) {
    const int64_t numel = s.map->shard(u).numel;
    std::vector<float> copy;
    const float* values = paged ? paged_master[u].data() : s.host_master(u, copy);
    if (s.opt.stage != 0 && s.W > 1) {
      // Consolidate the unit from every rank's master shard (through backend memory for NCCL).
      const int64_t S = s.shard_len(u), P = s.padded(u);
      void* buf = s.ledger.alloc(MemCategory::CommBuffers, size_t(P) * 4);
      void* mine = static_cast<char*>(buf) + size_t(s.rank_offset(u)) * 4;
      s.backend.copy_to_device(mine, values, size_t(S) * 4);
      s.comm.all_gather(mine, buf, size_t(P), DType::F32);
      full.resize(size_t(P));
      s.backend.copy_to_host(full.data(), buf, size_t(P) * 4);
      s.ledger.free(buf);
      values = full.data();
    }
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
  }
  out.checksum = h;
  out.l2 = std::sqrt(sq);
  return out;
}

}  // namespace zt
