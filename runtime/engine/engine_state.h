// Engine::State: the buffers and bookkeeping behind Engine, shared by the engine_*.cpp files that
// implement set-up, the unit walks (gather / release / reduce), the optimizer step and summaries.
#pragma once

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "offload/nvme_swapper.h"
#include "offload/pinned_memory.h"
#include "offload/staging_ring.h"
#include "offload/swap_pipeline.h"
#include "optim/lamb.h"
#include "optim/sgd.h"
#include "runtime/engine/engine.h"
#include "runtime/engine/precision_emulation.h"
#include "runtime/model/gpt2.h"

namespace zt {

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A reduce-scatter (stages 2–3) in flight: unit u's full gradient buffer, reduced in place so that
// this rank's shard slice holds the sum, then accumulated into the unit's gradient shard.
struct PendingReduce {
  int unit = 0;
  void* full = nullptr;
  CommHandlePtr handle;
  Clock::time_point issued;
};

// A stage 0–1 gradient collective in flight (for the trace: what and since when).
struct PendingCollective {
  CommHandlePtr handle;
  std::string name;
  Clock::time_point issued;
};

// One piece of the optimizer's walk: elements [begin, begin + n) of unit `unit`'s state arrays.
// With NVMe offload each sub-group is one record in the swap file: [master n (when not aliased)]
// [moment1 n] [moment2 n (Adam, Lamb)] fp32 values.
struct SubGroup {
  int unit = 0;
  int64_t begin = 0, n = 0;
};

// Stage 3: a unit's gathered (full) parameters, if any.
struct Gathered {
  void* full = nullptr;
  CommHandlePtr pending;       // the all-gather filling `full`, until waited
  Clock::time_point issued;
  void* shard_in = nullptr;    // parameter offload: the shard copied into backend memory, the gather's source
};

struct Engine::State {
  State(const ModelConfig& m, const EngineOptions& o, Backend& b, Communicator& c);

  // --- fixed --------------------------------------------------------------------------------
  ModelConfig model_cfg;
  EngineOptions opt;
  Backend& backend;
  Communicator& comm;
  MemoryLedger ledger;
  std::unique_ptr<GPT2> model;
  std::unique_ptr<ShardMap> map;
  std::vector<std::unique_ptr<ShardMap>> rank_maps;  // stage 0: every rank's view, for shard-ordered norms
  int W = 1, rank = 0, U = 0;
  size_t es = 4;                  // bytes per act_dtype element
  DType cdt = DType::F32;  // act_dtype as a communicator type
  bool host_fp32 = true;          // act_dtype is F32 on host memory: the optimizer reads grads in place
  bool master_aliases_work = true;  // fp32 training on the CPU backend: master == working params
  // Where each unit's optimizer state lives and how its step runs (decided in engine_setup.cpp):
  std::vector<char> offloaded;    // offload_optimizer covers the unit (every unit, or ratio's share)
  std::vector<char> device_adam;  // master and moments in device memory, fused GPU AdamW
  // Host optimizer on state apart from backend memory: the reduced gradients are copied out and
  // the new working params copied in, chunk by chunk, through `ring`.
  std::vector<char> staged;
  bool any(const std::vector<char>& flags) const {
    return std::any_of(flags.begin(), flags.end(), [](char f) { return f != 0; });
  }
  // fp32 master values of unit u on the host (a copy when they live on the device).
  const float* host_master(int u, std::vector<float>& tmp);

  // --- per-unit buffers (act_dtype unless noted) -------------------------------------------
  std::vector<void*> work;         // stage 0–2: full padded params; stage 3: the param shard
  std::vector<void*> grads;        // stage 0–1: full padded grads; stage 2–3: the grad shard
  std::vector<float*> master;      // fp32 host; stage 0: full padded; else the shard
  std::vector<float*> moment1, moment2;  // fp32 host, same extent as master (moment2 unused by SGD)
  std::vector<float*> grad_host;   // fp32 host copy of the reduced grads (staged units; every unit on
                                   // a GPU, where the norm is summed on the host); else nullptr
  std::vector<uint16_t> stage16;   // 16-bit host staging for device copies (set-up)
  std::vector<std::vector<float>> host_store;  // owns master, moments and staging when not aliased

  // --- stage 2–3 gradient buffers and stage 3 gathers -----------------------------------------
  std::map<int64_t, std::vector<void*>> pool;  // free full-unit buffers by padded size
  std::vector<void*> grad_full;                // unit -> full gradient buffer in use (stage 2–3)
  std::deque<PendingReduce> reducing;
  std::vector<Gathered> gathered;
  std::vector<PendingCollective> pending_unit_reductions;  // stage 0–1: all-reduce / reduce-scatter in flight
  std::vector<CommHandlePtr> param_gathers;  // stage 1–2: updated params being all-gathered
  int64_t live_elements = 0;

  // --- CPU offload transfers (engine_offload.cpp) ---------------------------------------------
  std::unique_ptr<offload::PinnedAllocator> pinned;
  std::unique_ptr<offload::StagingRing> ring;         // when any unit is staged
  std::vector<Backend::CopyTicket> publish_ticket;    // unit -> its last working-param copy-in
  void make_pinned();  // the allocator for every pinned host buffer (pin_memory honoured)
  void setup_staging();
  // Every unit's reduced gradient (this rank's range, averaged-to-be) as fp32 host memory: in place
  // for unstaged host units, else copied out chunk by chunk (copy of k+1 overlapping conversion of k).
  std::vector<float*> collect_grads();
  // New working params [begin, begin + n) of staged unit u from fp32 values, copied in by chunks.
  void publish_working(int u, int64_t begin, int64_t n, const float* values);
  // Adam on staged unit u's elements with the bf16 working copy written in the same pass, chunk by
  // chunk, each chunk's copy-in overlapping the next chunk's step.
  void adam_publish(int u, int64_t begin, int64_t n, float* p, const float* g, float* m, float* v);
  void* working_dst(int u, int64_t begin);  // where state element `begin` of unit u sits in work[u]

  // --- NVMe offload of the optimizer state (engine_offload.cpp) -----------------------------
  std::vector<SubGroup> subgroups;
  std::unique_ptr<offload::NvmeSwapper> swapper;
  std::unique_ptr<offload::SwapPipeline> pipeline;
  void setup_nvme(const std::vector<std::vector<float>>& initial_master);  // initial_master: when not aliased
  size_t record_floats(int64_t n) const;  // fp32 values per element-range record
  std::vector<std::vector<float>> read_masters();  // every unit's master from NVMe (summaries)
  // Parameter offload (stage 3). cpu: each unit's shard (work[u]) is pinned host memory; nvme: one
  // swap-file record per unit's shard. Either way the shard is copied into backend memory just
  // before its all-gather, and the update writes the new shard on the host.
  bool param_host = false, param_nvme = false;
  std::vector<offload::PinnedBuffer> param_store;  // param_host: the shards
  std::map<int64_t, std::vector<void*>> shard_pool;  // free backend buffers for shards coming in
  void* bring_in_shard(int u);                     // the shard of unit u in backend memory
  void drop_shard_in(int u);        // its backend buffer back to the pool, once the gather is done
  std::unique_ptr<offload::NvmeSwapper> param_swapper;
  std::vector<offload::PinnedBuffer> param_buffers;  // offload_param.buffer_count, used in turn
  size_t next_param_buffer = 0;
  void* param_buffer();
  std::vector<char> param_image;  // act_dtype: the shard being rebuilt from the master during the update
  int param_image_unit = -1;
  void setup_param_nvme(const std::vector<std::vector<float>>& initial_shards);
  // n fp32 values as act_dtype on the host (CPU backend: rounded to the training precision).
  void to_act(void* dst, const float* src, int64_t n) const;
  void* read_param_shard(int u);  // into the next parameter buffer
  void write_param_shard(int u);

  // --- progress -------------------------------------------------------------------------------
  int64_t steps = 0, applied = 0, skipped = 0;
  std::unique_ptr<LossScaler> scaler;
  std::vector<int32_t> tokens, targets;
  StepStats* cur = nullptr;  // stats of the step in progress (timing accumulators)
  std::unique_ptr<Trace> trace;  // when opt.trace
  // Records [begin, now) on the trace, if one is kept.
  void traced(const std::string& name, TraceTrack track, Clock::time_point begin) {
    if (trace) trace->span(name, track, begin, Clock::now());
  }
  std::string unit_name(int u) const { return model->layout(u).name; }

  // --- helpers (engine_setup.cpp) ------------------------------------------------------------
  int64_t padded(int u) const { return map->shard(u).padded; }
  DType comm_p() const { return opt.comm_precision.value_or(opt.precision); }
  DType accum_p() const { return opt.grad_accum_precision.value_or(opt.precision); }
  // Emulated 16-bit storage on the CPU backend: rounds fp32 host values to `p` (no-op on CUDA, where
  // the buffers really are bf16, and for FP32).
  void emulate(void* x, int64_t n, DType p) const {
    if (host_fp32) round_to_precision(static_cast<float*>(x), size_t(n), p);
  }
  // DeepSpeed's gradient averaging: with prescale_gradients each rank's gradient is divided by the
  // world size before the reduction; otherwise by gradient_predivide_factor before it and by
  // world_size / factor after it. (Here the pre-division is folded into the loss's gradient.)
  double s_predivide() const { return opt.prescale_gradients ? double(W) : opt.gradient_predivide_factor; }
  int64_t shard_len(int u) const { return map->shard(u).shard; }
  int64_t rank_offset(int u) const { return map->shard(u).rank_begin; }
  // Elements of master/moments per unit and where this rank's first element sits in the unit.
  int64_t state_len(int u) const { return opt.stage == 0 ? padded(u) : shard_len(u); }
  void* at(void* base, int64_t elements) const { return static_cast<char*>(base) + elements * int64_t(es); }
  void* acquire_full(int u, bool zero);  // a full-unit buffer from the pool (zeroed on request)
  void release_full(int u, void* p);

  // --- walks (engine_walk.cpp) ---------------------------------------------------------------
  const void* params_for(int u);           // gathers in stage 3
  void forward_walk();
  void backward_walk(bool last_micro_step);
  void finish_reductions();                // waits for every gradient collective of the step
  void drain_reduce(bool all);             // stage 2–3: completes queued reduce-scatters
  void gather(int u, bool wait);           // stage 3
  void maybe_release(int u, int walk_pos); // stage 3
  void prefetch_after(int walk_pos);       // stage 3
  void release_all_gathered();

  // --- step (engine_step.cpp) ----------------------------------------------------------------
  void optimizer_step(StepStats& st);
  void lamb_step(const std::vector<float*>& g, const LambHyper& h);  // engine_lamb.cpp
  // Working params [begin, begin + n) of unit u's state range from fp32 master values.
  void write_working(int u, int64_t begin, int64_t n, const float* master_values);
  // After unit u's update: stage 1–2 all-gather the updated shard (handle appended to `gathers` when
  // overlapping); with parameter NVMe offload, write the shard back to its record.
  void gather_updated(int u, std::vector<CommHandlePtr>& gathers);
  // One optimizer update of n elements (AdamW / Adam-L2 / SGD) with this step's hyper-parameters.
  void update_range(float* p, const float* g, float* m, float* v, int64_t n);
  AdamWHyper adam_h;
  SgdHyper sgd_h;
  std::vector<double> allgather_doubles(const std::vector<double>& local);  // every rank's, in rank order
};


}  // namespace zt
