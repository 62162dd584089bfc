// Engine::State: the ZeRO objects one engine conducts — partition, parameter store, gradient
// reducer, parameter gatherer, shard optimizer (with the loss scaler) — and the model they run.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "collectives/topology.h"
#include "runtime/zero/comm_groups.h"
#include "offload/pinned_memory.h"
#include "runtime/engine/engine.h"
#include "runtime/engine/engine_plan.h"
#include "runtime/model/causal_lm.h"
#include "runtime/zero/grad_reducer.h"
#include "runtime/zero/host_transfer.h"
#include "runtime/zero/param_gatherer.h"
#include "runtime/zero/param_store.h"
#include "runtime/zero/partition.h"
#include "runtime/zero/shard_optimizer.h"
#include "runtime/zero/unit_buffers.h"
#include "runtime/zero/zero_context.h"

namespace zt {

struct Engine::State {
  State(const ModelConfig& model_config, const EngineOptions& options, Backend& backend_in, Communicator& comm_in);
  ~State();

  ModelConfig model_cfg;
  EngineOptions opt;
  Backend& backend;
  Communicator& comm;
  // What this engine keeps, splits and reserves, decided before anything is allocated; the
  // partition is the plan's.
  std::unique_ptr<EnginePlan> plan;
  NodeTopology topology;  // opt.ranks_per_node over the world
  // The world and the groups split from it (MiCS's shard and replica groups, hpZ's, the
  // hierarchical gather's), with their links; before every object that issues on them.
  std::unique_ptr<CommGroups> groups;
  MemoryLedger ledger;  // declared before every object that allocates through it
  std::vector<std::string> setup_warnings;  // what setup found (pinning refused), for the run to print once
  std::unique_ptr<CausalLM> model;
  std::shared_ptr<Partition> part;  // plan->partition()
  std::unique_ptr<Trace> trace;
  std::unique_ptr<ZeroContext> z;
  offload::PinnedAllocator pinned;
  std::unique_ptr<UnitBufferPool> pool;
  std::unique_ptr<HostTransfer> transfer;  // when any unit is staged
  std::unique_ptr<ParamStore> store;
  std::unique_ptr<GradReducer> reducer;
  std::unique_ptr<ParamGatherer> gatherer;
  std::unique_ptr<ShardOptimizer> optimizer;

  int64_t steps = 0;  // steps attempted (the optimizer counts the applied and skipped ones)
  std::vector<int32_t> tokens, targets;

  // Every unit's working parameters from param_len fp32 values each through the ParamStore
  // (`fill(u, scratch)` returns where they are: the range this rank keeps, the whole padded unit for
  // stages 0–2, its shard for 3; written into `scratch`, which it sizes, or memory that already holds
  // them, such as the master after a load, so that nothing is copied twice); with `with_master` the
  // same values also become the optimizer's master (setup; a load has written it).
  void set_params(const std::function<const float*(int u, std::vector<float>& scratch)>& fill, bool with_master);
  // Unit u whole from every rank's `shard` of it (host memory), handed to `use` on the host: the
  // gathered buffer itself (on the ledger) where backend memory is host memory, else a host copy.
  // Collective, through backend memory (NCCL needs device buffers).
  void gather_unit(int u, const float* shard, const std::function<void(const float*)>& use);

  // The walks of one micro-step.
  void forward_walk();
  void backward_walk(bool last_micro_step);
  // DeepSpeed's gradient averaging: with prescale_gradients each rank's gradient is divided by the
  // world size before the reduction; otherwise by gradient_predivide_factor before it and by
  // world_size / factor after it. (The pre-division is folded into the loss's gradient.)
  double predivide() const { return opt.prescale_gradients ? double(comm.world_size()) : opt.gradient_predivide_factor; }
};

}  // namespace zt
