// plan_to_json / plan_to_table: a MemoryPlan as one JSON object (bytes) and as a human table (GiB,
// two decimals), one row per category with our number and DeepSpeed's estimate side by side.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "runtime/plan/memory_plan.h"
#include "runtime/plan/units.h"
#include "base/stage_traits.h"

namespace zt {

namespace {
int64_t bytes(double b) { return static_cast<int64_t>(std::llround(b)); }
}  // namespace

nlohmann::json plan_to_json(const MemoryPlan& p) {
  const PlanInput& in = p.input;
  nlohmann::json j;
  j["input"] = {
      {"params", in.params},
      {"world_size", in.world_size},
      {"stage", in.stage},
      {"precision", dtype_name(in.precision)},
      {"optimizer", optimizer_name(in)},
      {"offload_optimizer", offload_name(in.offload_optimizer)},
      {"offload_optimizer_ratio", in.offload_optimizer_ratio},
      {"offload_param", offload_name(in.offload_param)},
      {"ranks_per_node", in.ranks_per_node},
      {"activation_checkpointing", in.activation_checkpointing},
  };
  if (in.micro_batch > 0) {
    j["input"]["activations"] = {{"micro_batch", in.micro_batch}, {"seq_len", in.seq_len},
                                 {"hidden", in.hidden},           {"layers", in.layers},
                                 {"heads", in.heads},             {"vocab", in.vocab}};
  }
  j["optimizer_k"] = p.optimizer_k;
  j["master_k"] = p.master_k;
  j["state_k"] = p.state_k;
  j["working_bytes"] = p.working_bytes;
  j["units"] = "bytes";
  j["device_per_rank"] = {
      {"params", bytes(p.device_params)},
      {"grads", bytes(p.device_grads)},
      {"optimizer", bytes(p.device_optimizer)},
      {"model_states", bytes(p.device_model_states())},
      {"activations", bytes(p.device_activations)},
      {"buffers", bytes(p.device_buffers)},
      {"total", bytes(p.device_total())},
  };
  // What the stage divides each model state's bytes per rank by (base/stage_traits.h) over
  // the ranks that shard them (the world, or MiCS's group): the sweep takes ZeRO's formula from here
  // rather than restating it.
  const StageTraits traits = stage_traits(in.stage);
  const int world = plan_state_shards(in);
  j["stage_divisors"] = {
      {"params", traits.param_divisor(world)},
      {"grads", traits.grad_divisor(world)},
      {"optimizer", traits.optimizer_divisor(world)},
  };
  j["comm_buffers_per_rank"] = bytes(p.comm_buffers);
  j["comm_device_buffers_per_rank"] = bytes(p.comm_device_buffers);
  j["checkpoint_snapshot_per_rank"] = bytes(p.checkpoint_snapshot);
  if (in.process_baseline) j["process_baseline_per_rank"] = *in.process_baseline;
  j["host_per_rank"] = bytes(p.host_bytes_per_rank);
  j["host_per_node"] = bytes(p.host_bytes_per_node);
  j["nvme_per_rank"] = bytes(p.nvme_bytes_per_rank);
  j["nvme_per_node"] = bytes(p.nvme_bytes_per_node);
  j["ranks_on_node"] = p.ranks_on_node;
  j["deepspeed_estimate"] = {
      {"function", p.ds_estimator},
      {"device_per_rank", bytes(p.ds_estimate_device)},
      {"host_per_node", bytes(p.ds_estimate_host)},
      {"additional_buffer_factor", 1.5},
  };
  if (stage_traits(p.input.stage).gathers_params()) j["deepspeed_estimate"]["largest_layer_params"] = p.ds_largest_layer_params;
  return j;
}

std::string plan_to_table(const MemoryPlan& p) {
  const PlanInput& in = p.input;
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line,
                "Memory plan: %s params, ZeRO stage %d, world size %d (%d per node), %s, %s (K = %d: master %d + state %d)\n",
                format_params(in.params).c_str(), in.stage, in.world_size, p.ranks_on_node,
                dtype_name(in.precision), optimizer_name(in).c_str(), p.optimizer_k, p.master_k,
                p.state_k);
  out += line;
  std::snprintf(line, sizeof line, "offload_optimizer=%s (ratio %.2f), offload_param=%s\n",
                offload_name(in.offload_optimizer), in.offload_optimizer_ratio, offload_name(in.offload_param));
  out += line;
  auto g = [](double b) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", b / (1024.0 * 1024.0 * 1024.0));
    return std::string(buf);
  };
  auto row = [&](const char* name, const std::string& ours, const std::string& ds) {
    std::snprintf(line, sizeof line, "  %-34s %14s %14s\n", name, ours.c_str(), ds.c_str());
    out += line;
  };
  row("category (GiB)", "zerotrain", "DeepSpeed est.");
  row("device params / rank", g(p.device_params), "-");
  row("device grads / rank", g(p.device_grads), "-");
  row("device optimizer states / rank", g(p.device_optimizer), "-");
  row("device model states / rank", g(p.device_model_states()), g(p.ds_estimate_device));
  row("device activations / rank", g(p.device_activations), "-");
  row("device buffers / rank", g(p.device_buffers), "-");
  row(in.backend_is_host ? "  of which communicator / rank" : "  communicator (host RAM) / rank", g(p.comm_buffers), "-");
  if (p.comm_device_buffers > 0) row("  of which NCCL (measured) / rank", g(p.comm_device_buffers), "-");
  row("device total / rank", g(p.device_total()), "-");
  if (in.process_baseline) row("process baseline (measured) / rank", g(double(*in.process_baseline)), "-");
  if (p.checkpoint_snapshot > 0) row("checkpoint snapshot / rank", g(p.checkpoint_snapshot), "-");
  row("host RAM / node", g(p.host_bytes_per_node), g(p.ds_estimate_host));
  row("NVMe / node", g(p.nvme_bytes_per_node), "-");
  out += "  DeepSpeed column: " + p.ds_estimator + " (buffer factor 1.5";
  if (stage_traits(in.stage).gathers_params()) {
    out += ", largest layer " + format_params(p.ds_largest_layer_params) + " params, zero_init=" +
           (in.ds_zero_init ? "1" : "0");
  }
  std::vector<std::string> host = {"offload"};
  if (p.checkpoint_snapshot > 0) host.push_back("the checkpoint snapshot");
  if (!in.backend_is_host && p.comm_buffers > 0) host.push_back("the communicator");
  out += "); its host number includes model loading, ours only what ";
  for (size_t i = 0; i < host.size(); ++i) out += (i == 0 ? "" : i + 1 == host.size() ? " and " : ", ") + host[i];
  out += host.size() == 1 ? " keeps there.\n" : " keep there.\n";
  const bool opt_off = in.offload_optimizer != OffloadDevice::None;
  const bool param_off = in.offload_param != OffloadDevice::None;
  if (in.offload_optimizer == OffloadDevice::NVMe || in.offload_param == OffloadDevice::NVMe) {
    out += "  DeepSpeed's estimator knows only CPU offload: NVMe offload is shown as if it were CPU.\n";
  }
  if (stage_traits(in.stage).gathers_params() && param_off && !opt_off) {
    out += "  DeepSpeed's estimator has no offload_param-only case: its no-offload numbers are shown.\n";
  }
  if (!stage_traits(in.stage).shards_grads) out += "  DeepSpeed has no stage-0/1 estimator: its ZeRO-2 formula is shown.\n";
  return out;
}

}  // namespace zt
