// check_fit and the size and backend arguments: the memory plan of a valid config against this
// machine or the flags' target, for check and tune.
#include "runtime/cli/fit_check.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "collectives/comm_options.h"
#include "kernels/backend.h"
#include "runtime/config/config_plan.h"
#include "runtime/engine/engine_plan.h"
#include "runtime/model/causal_lm.h"
#include "runtime/plan/gpu_memory.h"
#include "runtime/plan/machine_probe.h"
#include "runtime/train/engine_config.h"
#include "base/stage_traits.h"

namespace zt {
namespace {

// What the target backend's attention keeps for backward per block, without the backend (check may
// run where it is not built): the CPU backend's tiled attention keeps each row's fp32 log-sum-exp
// and an fp32 copy of its output (kernels/cpu/attention.h); the CUDA flash kernels the fp32
// log-sum-exp (rounded up to 256 bytes) and a bf16 copy of the output, the reference kernels (head
// sizes other than 16, 32, 64, 128) the fp32 probabilities, T×T per head.
size_t attention_saved_estimate(ComputeBackend backend, int micro_batch, const ModelConfig& m) {
  const size_t B = size_t(micro_batch), T = size_t(m.seq_len), C = size_t(m.attention_width()), NH = size_t(m.heads);
  if (backend == ComputeBackend::Cpu) return (B * NH * T + B * T * C) * 4;
  const size_t hs = NH > 0 ? C / NH : 0;
  if (hs != 16 && hs != 32 && hs != 64 && hs != 128) return B * NH * T * T * 4;
  return (B * NH * T * 4 + 255) / 256 * 256 + B * T * C * 2;
}

}  // namespace

bool parse_bytes(const std::string& text, uint64_t& out) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !(v > 0)) return false;
  std::string unit(end);
  for (auto& ch : unit) ch = char(std::toupper(static_cast<unsigned char>(ch)));
  if (!unit.empty() && unit.back() == 'B') unit.pop_back();  // 80GB, 80GiB
  if (!unit.empty() && unit.back() == 'I') unit.pop_back();
  double mult = 1;
  if (unit == "K") mult = 1024.0;
  else if (unit == "M") mult = 1024.0 * 1024;
  else if (unit == "G") mult = 1024.0 * 1024 * 1024;
  else if (unit == "T") mult = 1024.0 * 1024 * 1024 * 1024;
  else if (!unit.empty()) return false;
  const double b = v * mult;
  if (b >= 1.8e19) return false;
  out = uint64_t(b);
  return true;
}

ModelSize model_size_of(const std::string& model, const std::string& params, Diagnostics& d) {
  ModelSize m;
  if (!model.empty()) {
    m.model = model_preset(model);
    if (!m.model) {
      std::string names;
      for (const auto& n : model_preset_names()) names += (names.empty() ? "" : ", ") + n;
      d.error("--model", model, "unknown model preset", "use one of: " + names);
    } else {
      m.params = m.model->total_params();
    }
  } else if (!params.empty() && !parse_param_count(params, m.params)) {
    d.error("--params", params, "not a parameter count", "write it like 7e9, 7B, 1.5B, 124M or 350K");
  }
  return m;
}

ComputeBackend backend_of(const std::string& asked, std::string& why) {
  if (asked == "cuda") return ComputeBackend::Cuda;
  if (asked == "cpu") return ComputeBackend::Cpu;
  const bool gpu = cuda_backend_compiled() && query_gpu_memory().has_value();
  why = gpu ? "auto: a GPU is visible here" : "auto: no usable GPU here; pass --backend cuda to check for GPU ranks";
  return gpu ? ComputeBackend::Cuda : ComputeBackend::Cpu;
}

// The memory plan against this machine or the flags' target; nvme_path probes only here.
FitReport check_fit(const FitTarget& a, const Config& c, int64_t params, const ModelConfig* model, ComputeBackend backend,
                    Diagnostics& d) {
  FitReport f;
  if (params <= 0) {
    f.plan_text = "fits: not assessed (pass --params N or --model NAME to size the plan)\n";
    return f;
  }
  f.assessed = true;
  const bool here = a.gpu_memory.empty() && a.host_ram.empty();
  MachineFacts facts = probe_machine();
  if (backend == ComputeBackend::Cpu) facts.gpu_free.reset(), facts.gpu_total.reset();
  f.target = here ? "this machine" : "the target";
  if (!a.host_ram.empty()) {
    uint64_t b = 0;
    if (parse_bytes(a.host_ram, b)) facts.host_mem_available = facts.host_mem_total = b;
    else d.error("--host-ram", a.host_ram, "not a size", "write it like 512G, 2T or 549755813888");
    f.target += ", host RAM " + a.host_ram;
  }
  if (!a.gpu_memory.empty()) {
    uint64_t b = 0;
    if (backend == ComputeBackend::Cpu)
      d.warning("--gpu-memory", a.gpu_memory, "has no effect with the cpu backend", "pass --backend cuda");
    else if (parse_bytes(a.gpu_memory, b)) facts.gpu_free = facts.gpu_total = b;
    else d.error("--gpu-memory", a.gpu_memory, "not a size", "write it like 80G or 24GiB");
    f.target += ", GPU memory " + a.gpu_memory;
  }
  if (a.usable_share < 1.0) {  // tune's headroom: the plan must fit this share of the memory
    auto scale = [&](uint64_t v) { return uint64_t(double(v) * a.usable_share); };
    facts.host_mem_available = scale(facts.host_mem_available);
    facts.host_mem_total = scale(facts.host_mem_total);
    if (facts.gpu_free) facts.gpu_free = scale(*facts.gpu_free);
    if (facts.gpu_total) facts.gpu_total = scale(*facts.gpu_total);
  }
  if (backend == ComputeBackend::Cuda && !facts.gpu_free)
    f.diagnostics.warning("--gpu-memory", "", "the plan is for GPU ranks and there is no GPU here, so GPU memory was not checked",
                          "pass --gpu-memory (e.g. 80G) to check against the target's GPUs");
  const int rpn = a.ranks_per_node > 0 ? a.ranks_per_node : std::min(a.world_size, 8);
  PlanInput plan_in = plan_input(c, params, model, rpn);
  plan_in.emulates_16bit_in_fp32 = backend == ComputeBackend::Cpu;
  plan_in.backend_is_host = backend == ComputeBackend::Cpu;
  // CPU ranks talk through the MPI communicator, whose buffers the run reserves for the whole model
  // in fp32 (up to the cap); GPU ranks through NCCL, whose own buffers NCCL does not report.
  if (backend == ComputeBackend::Cpu && a.world_size > 1)
    plan_in.comm_buffer_bytes = mpi_buffer_bytes(uint64_t(params) * 4, CommOptions::from_env().buffer_bytes);
  if (model && plan_in.micro_batch > 0)
    plan_in.activation_bytes = double(causal_lm_activation_bytes_for(
        *model, ModelRunOptions{int(plan_in.micro_batch), plan_in.activation_checkpointing}, size_t(plan_working_bytes(plan_in)),
        attention_saved_estimate(backend, int(plan_in.micro_batch), *model)));
  if (model) {  // the engine's unit buffers and optimizer extras as a run at this world size would hold them
    const EnginePlan ep(*model, engine_options_from_config(c, 0, plan_in.activation_checkpointing, model),
                        backend == ComputeBackend::Cpu ? BackendCaps::cpu() : BackendCaps::cuda(), a.world_size, 0);
    plan_in.unit_buffer_bytes = double(ep.unit_buffer_bytes(size_t(plan_working_bytes(plan_in))));
    plan_in.optimizer_extra_bytes = ep.optimizer_extra_bytes();
    // Bytes per step for tune's score: reductions repeat per micro-step where gradients are sharded,
    // gathers where parameters are.
    const size_t w = size_t(plan_working_bytes(plan_in));
    const auto v = ep.partition()->expected_comm_volumes_per_step(w);
    const StageTraits traits = stage_traits(int(*c.zero_optimization.stage));
    const double gas = double(std::max<int64_t>(1, *c.gradient_accumulation_steps));
    const double reduce = double(v.bytes[int(CommOp::AllReduce)] + v.bytes[int(CommOp::ReduceScatter)]);
    const double gather = double(v.bytes[int(CommOp::AllGather)] + v.bytes[int(CommOp::AllToAll)]);
    if (a.world_size > 1) f.wire_bytes_per_step = reduce * (traits.shards_grads ? gas : 1) + gather * (traits.shards_params ? gas : 1);
    if (plan_in.offload_optimizer != OffloadDevice::None)
      f.offload_bytes_per_step = 2.0 * double(w) * double(params) / (a.world_size > 1 ? a.world_size : 1);
  }
  if (!a.save_dir.empty()) {  // (4 + state_k)·Ψ/S per owning rank; the run plans the engine's exact bytes
    plan_in.checkpoint_snapshot_bytes = checkpoint_snapshot_estimate(plan_in);
    plan_in.save_dir = a.save_dir;
  }
  const MemoryPlan plan = make_memory_plan(plan_in);
  const std::string nvme = plan_nvme_path(c);
  if (here) check_nvme_paths_here(c, f.diagnostics);
  f.diagnostics.append(preflight(plan, facts, nvme, here));
  f.plan = plan;
  f.memory = plan_to_json(plan);
  f.plan_text = plan_to_table(plan);
  return f;
}

}  // namespace zt
