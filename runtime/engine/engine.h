// Engine: the ZeRO training step, a conductor over the ZeRO objects (runtime/zero/) that its
// EnginePlan (engine_plan.h) decided before anything was allocated: the partition decides what each
// rank keeps, the parameter gatherer fetches and releases, the gradient reducer reduces buckets as
// backward fills them, the shard optimizer computes the norm's partials and updates the rank's
// shard. See docs/DESIGN.md for the map.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collectives/communicator.h"
#include "collectives/topology.h"
#include "kernels/backend.h"
#include "runtime/engine/engine_options.h"
#include "runtime/zero/quantized_gather.h"
#include "runtime/zero/memory_ledger.h"
#include "runtime/zero/trace.h"
#include "runtime/model/model_config.h"
#include "runtime/zero/partition.h"
#include "runtime/zero/shard_map.h"
#include "runtime/zero/shard_optimizer.h"

namespace zt {

struct StepStats {
  int64_t step = 0;            // optimizer steps attempted so far, this one included
  double loss = 0;             // mean over the global batch
  double lr = 0;               // lr used by this step
  double grad_norm = 0;        // global L2 norm of the averaged, unscaled gradients (before clipping)
  double loss_scale = 1;       // fp16: the scale this step ran with
  bool skipped = false;        // non-finite gradients: no update
  bool exact_gradients = true; // the gradients were all-reduced (false in a compressed optimizer's compressed and local steps)
  StepComm optimizer_comm = StepComm::Exact;  // what crossed the ranks for the update (runtime/zero/compressed_optimizer.h)
  int64_t skipped_total = 0;
  uint64_t comm_bytes[kCommOpCount] = {};  // this rank's algorithm bytes, this step
  uint64_t comm_calls[kCommOpCount] = {};
  // The job's bytes on intra-node and inter-node links this step (LinkModel over comm_bytes: every
  // rank reports the same totals).
  LinkBytes comm_links;
  // Of comm_bytes / comm_calls, what each of the engine's groups carried (runtime/zero/comm_groups.h:
  // by_role[Secondary] is hpZ's gathers from the secondary copy, by_role[Replica] MiCS's all-reduce).
  StepTraffic groups;
  double seconds = 0;
  // wall_clock_breakdown: compute and the time spent waiting for communication.
  double forward_s = 0, backward_s = 0, reduce_wait_s = 0, gather_wait_s = 0, optimizer_s = 0;
  uint64_t mem_peak = 0;       // ledger peak bytes on this rank, since start
  uint64_t grad_bytes_to_host = 0;  // gradient bytes copied out of backend memory (offload only)
  // qwZ: this rank's sampled quantization error of the step's parameter gathers (gathers == 0: off).
  QuantError quant_weights;
  // qgZ: the same for the step's gradient reductions, both hops (calls == 0: off), and the elements
  // of 1-D tensors it reduced exactly instead.
  QuantError quant_grads;
};

struct ParamSummary {
  uint64_t checksum = 0;  // FNV-1a 64 over the consolidated fp32 parameters (unit order, no padding)
  double l2 = 0;          // their L2 norm, accumulated in double in unit order
  int64_t count = 0;      // parameters hashed (Ψ)
};

class Engine {
 public:
  // Fills one micro-step's tokens and targets ([micro_batch, seq_len] each) for this rank.
  using BatchFn = std::function<void(int micro_step, int32_t* tokens, int32_t* targets)>;

  Engine(const ModelConfig& model, const EngineOptions& options, Backend& backend, Communicator& comm);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // One optimizer step over grad_accum micro-steps. Collective: every rank calls it.
  StepStats train_step(const BatchFn& fill);
  // Forward-only: `micro_steps` micro-batches on every rank (targets < 0 are padding, not counted).
  // The sums over every rank, in rank order. Collective.
  struct EvalSums {
    double loss_sum = 0;  // Σ per-token cross-entropy
    int64_t tokens = 0;   // targets counted
    double mean() const { return tokens > 0 ? loss_sum / double(tokens) : 0.0; }
  };
  EvalSums evaluate(const BatchFn& fill, int micro_steps);
  // Checksum and L2 of the consolidated fp32 parameters (the master copy). Collective; its own
  // communication is not counted in any step's bytes.
  ParamSummary param_summary();
  // Every unit's consolidated fp32 master (numel values, unit order) handed to `each` on every rank
  // (stages 1–3 gather the shards first). Collective; not counted in any step's bytes.
  void for_each_full_master(const std::function<void(int unit, const float* values, int64_t numel)>& each);
  const ModelConfig& model_config() const;

  // The timeline recorded so far when options.trace is on; null otherwise.
  const Trace* trace() const;
  const ShardMap& shard_map() const;
  const Partition& partition() const;
  // This rank and the job's size in the world; the partition's rank() and world_size() are its
  // shard group's under MiCS.
  int world_rank() const;
  int world_size() const;
  // Buckets of one gradient reduction (reduce_bucket_size) and of the stage 1–2 post-update gather
  // (allgather_bucket_size; 0 in stages 0 and 3): one collective call each.
  int64_t grad_buckets() const;
  int64_t param_sync_buckets() const;
  const MemoryLedger& ledger() const;
  // Host memory the run holds for this engine's state beside it (the checkpoint writer's snapshot),
  // counted on its ledger with the offloaded host arrays.
  void count_host_memory(MemCategory c, uint64_t bytes);
  // What setup found that the user should know (e.g. pin_memory refused by RLIMIT_MEMLOCK): one
  // message each, the same on every rank that has it; the run prints them once for the job.
  const std::vector<std::string>& setup_warnings() const;
  const EngineOptions& options() const;
  int64_t applied_steps() const;
  int64_t params() const;  // Ψ
  // Algorithm bytes one step with one micro-step communicates under this stage (Partition's
  // expected_comm_bytes_per_step; accumulation repeats the stage 2–3 reductions and stage 3 gathers
  // per micro-step). Element bytes of the working type.
  uint64_t expected_comm_bytes_per_step() const;
  // What StepStats::comm_links will read for one step: the plan's prediction over this engine's
  // groups and its reducer's qgZ traffic (EnginePlan::expected_link_bytes_per_step).
  // `comm`: the kind of step of a compressed optimizer (every other optimizer's steps are Exact).
  LinkBytes expected_link_bytes_per_step(StepComm comm = StepComm::Exact) const;
  // What the next step moves for the update (Exact: its gradients are all-reduced).
  StepComm step_comm_next() const;
  bool exact_gradients_next_step() const { return step_comm_next() == StepComm::Exact; }
  // 1-bit Adam's or 0/1 Adam's phases and per-rank arrays (a checkpoint saves them); null otherwise.
  CompressedOptimizer* compressed_optimizer();
  bool quantizes_gradients() const;  // qgZ is on (asked for, stage 3, more than one node)
  int64_t quantized_gradient_block() const;  // qgZ's elements per scale (0: off)
  const NodeTopology& topology() const;

  // --- checkpoints (runtime/engine/engine_checkpoint.h maps these onto a ShardedState) ---------
  // The run's counters between steps: steps taken, updates applied, fp16 overflow skips, and the
  // fp16 loss scaler's state (absent for fp32/bf16).
  struct Counters {
    int64_t steps = 0, applied = 0, skipped = 0;
    std::optional<LossScaler::State> scaler;
  };
  Counters counters() const;
  void restore_counters(const Counters& c);  // a scaler state is ignored when the run has no scaler
  double next_lr() const;                    // the lr the next applied update uses (the scheduler's)
  // Unit u's fp32 state array `a`, elements [begin, begin + n) in state coordinates (the
  // ShardOptimizer's read_state / write_state).
  bool has_state(StateArray a) const;
  void read_state(StateArray a, int u, int64_t begin, int64_t n, float* out);
  void write_state(StateArray a, int u, int64_t begin, int64_t n, const float* in);
  // Where those elements live as fp32 host memory a checkpoint load may fill in place, or null
  // (ShardOptimizer::host_state).
  float* host_state(StateArray a, int u, int64_t begin, int64_t n);
  // After write_state (or a write through host_state): every unit's working parameters rebuilt from the master through the path the
  // engine's setup takes (rounded to the working type, offload copies written), gathered as the
  // stage keeps them (stages 1–2: the full unit from every rank's shard). Collective.
  void params_from_master();

  struct State;  // the implementation (engine_state.h); public only so its .cpp helpers can name it

 private:
  std::unique_ptr<State> s_;
};

}  // namespace zt
