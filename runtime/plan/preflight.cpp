// preflight: the memory plan against this machine — host RAM for CPU offload (and for everything
// on the CPU backend), free GPU memory, free space at nvme_path — one error per shortfall.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "runtime/plan/machine_probe.h"
#include "runtime/plan/units.h"
#include "base/stage_traits.h"

namespace zt {

namespace {

std::string gib1(double b) { return format_gib(b, 1); }

// NVMe sizes span bytes to terabytes: the unit that fits the number ("512 bytes", "3.2 MiB", "1.5 GiB").
std::string sized(double b) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && b >= 1024.0) b /= 1024.0, ++u;
  char out[48];
  if (u == 0) std::snprintf(out, sizeof out, "%.0f bytes", b);
  else std::snprintf(out, sizeof out, "%.1f %s", b, units[u]);
  return out;
}

std::string scale_of(const MemoryPlan& p) {
  return format_params(p.input.params) + " params at world size " + std::to_string(p.input.world_size);
}

// "offload_optimizer=cpu", "offload_optimizer=cpu + offload_param=cpu", "... + the checkpoint
// snapshot (--save)": what puts bytes in host RAM, and whether they are named as one thing ("needs")
// or several ("need").
struct HostUsers {
  std::string text;
  bool plural = false;
};

HostUsers host_users(const MemoryPlan& p) {
  std::vector<std::string> v;
  bool plural = false;
  if (p.input.offload_optimizer != OffloadDevice::None && p.input.optimizer.has_value())
    v.push_back(std::string("offload_optimizer=") + offload_name(p.input.offload_optimizer));
  if (p.input.offload_param != OffloadDevice::None && stage_traits(p.input.stage).gathers_params())
    v.push_back(std::string("offload_param=") + offload_name(p.input.offload_param));
  if (p.checkpoint_snapshot > 0) v.push_back("the checkpoint snapshot (--save)");
  if (!p.input.backend_is_host && p.comm_buffers > 0) v.push_back("the communicator's buffers"), plural = true;
  HostUsers u;
  for (const auto& s : v) u.text += (u.text.empty() ? "" : " + ") + s;
  u.plural = plural || v.size() > 1;
  return u;
}

// "a, b or c".
std::string either(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i == 0 ? "" : i + 1 == v.size() ? " or " : ", ") + v[i];
  return s;
}

bool offloads(const MemoryPlan& p) {
  return (p.input.offload_optimizer != OffloadDevice::None && p.input.optimizer.has_value()) ||
         (p.input.offload_param != OffloadDevice::None && stage_traits(p.input.stage).gathers_params());
}

std::string host_key(const MemoryPlan& p) {
  if (p.input.offload_optimizer != OffloadDevice::None && p.input.optimizer.has_value()) return "zero_optimization.offload_optimizer.device";
  if (offloads(p)) return "zero_optimization.offload_param.device";
  return p.checkpoint_snapshot > 0 ? "--save" : "ZT_COMM_BUFFER_MB";
}

// What a background save holds, for the fixes that name --save.
std::string snapshot_remedy(const MemoryPlan& p) {
  return "run without --save (a background save copies each rank's master and moments, " + gib1(p.checkpoint_snapshot) +
         " per rank, into host RAM so that training goes on while the file is written)";
}

// A change that would make the plan fit, with the bytes per rank it would save: the fix message
// names the largest saving first, so the first thing a user tries addresses the largest term.
struct Remedy {
  double saves = 0;
  std::string text;
};

std::string largest_first(std::vector<Remedy> r) {
  std::stable_sort(r.begin(), r.end(), [](const Remedy& a, const Remedy& b) { return a.saves > b.saves; });
  std::string out;
  for (const auto& x : r)
    if (x.saves > 0) out += (out.empty() ? "" : "; ") + x.text;
  return out;
}

// What the device terms allow: smaller micro batches or recompute for activations, a higher stage
// only where it divides by N (world size 2+), smaller buckets for the buffers.
std::vector<Remedy> device_remedies(const MemoryPlan& p) {
  std::vector<Remedy> r;
  const int W = p.input.world_size, stage = p.input.stage;
  if (p.device_activations > 0) {
    std::string t = "lower train_micro_batch_size_per_gpu (activations are " + gib1(p.device_activations) +
                    " per rank and scale with it)";
    if (!p.input.activation_checkpointing) t += " or turn on activation checkpointing (--recompute)";
    r.push_back({p.device_activations * 0.5, t});
  }
  const StageTraits traits = stage_traits(stage);
  if (W > 1 && !traits.shards_params) {
    // Replicated terms a higher stage would divide by N: grads from stage 2, params at stage 3.
    const double unsharded = (traits.shards_optimizer ? 0 : p.device_optimizer) + (traits.shards_grads ? 0 : p.device_grads) + p.device_params;
    const double saves = unsharded * (1.0 - 1.0 / W);
    r.push_back({saves, "raise zero_optimization.stage to 3 (it keeps 1/" + std::to_string(W) +
                            " of the params" + (traits.shards_grads ? "" : ", grads") + (traits.shards_optimizer ? "" : " and optimizer state") +
                            " per rank: " + gib1(saves) + " less)"});
  }
  if (W == 1)
    r.push_back({p.device_model_states() * 0.5, std::string("add ranks with a ZeRO stage of 1 or more (at world size 1 ") +
                                                    "every stage keeps the whole model: ZeRO divides by the number of ranks)"});
  if (p.device_buffers > 0)
    r.push_back({p.device_buffers * 0.5, "shrink reduce_bucket_size" + std::string(traits.gathers_params() ? " / stage3_max_live_parameters" : "") +
                                             " (buffers are " + gib1(p.device_buffers) + ")"});
  return r;
}

void check_host_offload(const MemoryPlan& p, const MachineFacts& f, Diagnostics& d) {
  const double need = p.host_bytes_per_node;
  const double have = double(f.host_mem_available);
  if (need <= have) return;
  const OffloadDevice dev = !offloads(p) ? OffloadDevice::None
                            : p.input.offload_optimizer != OffloadDevice::None && p.input.optimizer.has_value()
                                ? p.input.offload_optimizer
                                : p.input.offload_param;
  const bool sharded = dev != OffloadDevice::None || p.checkpoint_snapshot > 0;  // else the capped communicator alone
  std::vector<std::string> fixes;
  const int fit = p.host_bytes_per_rank > 0 ? int(std::floor(have / p.host_bytes_per_rank)) : 0;
  if (fit >= 1) fixes.push_back("run at most " + std::to_string(fit) + " rank(s) per node (or spread the job over more nodes)");
  else if (sharded) fixes.push_back("use more ranks so that each shard is smaller (even one rank does not fit now)");
  if (stage_traits(p.input.stage).gathers_params() && p.input.offload_optimizer == OffloadDevice::CPU) {
    char r[32];
    std::snprintf(r, sizeof r, "%.2f", std::max(0.0, p.input.offload_optimizer_ratio * have / need));
    fixes.push_back(std::string("offload only part of the optimizer (offload_optimizer.ratio <= ") + r + ")");
  }
  if (dev == OffloadDevice::CPU) fixes.push_back("offload to \"nvme\" with a local nvme_path");
  else if (dev == OffloadDevice::NVMe) fixes.push_back("lower buffer_count / sub_group_size (the NVMe staging buffers live in host RAM)");
  if (p.checkpoint_snapshot > 0) fixes.push_back(snapshot_remedy(p));
  if (!sharded) fixes.push_back("lower ZT_COMM_BUFFER_MB (the communicator's buffers are " + gib1(p.comm_buffers) + " per rank)");
  const HostUsers users = host_users(p);
  d.error(host_key(p),
          dev != OffloadDevice::None ? std::string(offload_name(dev))
          : p.checkpoint_snapshot > 0 ? p.input.save_dir
                                      : gib1(p.comm_buffers) + " per rank",
          users.text + (users.plural ? " need " : " needs ") + gib1(need) + " of host RAM for " + scale_of(p) +
              "; this host has " + gib1(have) + " available",
          "each of the " + std::to_string(p.ranks_on_node) + " rank(s) on this node keeps " + gib1(p.host_bytes_per_rank) +
              " in host RAM; " + either(fixes));
}

void check_cpu_backend(const MemoryPlan& p, const MachineFacts& f, Diagnostics& d) {
  const double per_rank = p.device_total();
  const double need = per_rank * p.ranks_on_node + p.host_bytes_per_node;
  const double have = double(f.host_mem_available);
  if (need <= have) return;
  std::string msg = "CPU backend: " + std::to_string(p.ranks_on_node) + " rank(s) on this node need " +
                    gib1(need) + " of host RAM for " + scale_of(p) + " (per rank: model states " +
                    gib1(p.device_model_states()) + ", activations " + gib1(p.device_activations) +
                    ", buffers " + gib1(p.device_buffers);
  if (p.host_bytes_per_node > 0) msg += "; " + host_users(p).text + " " + gib1(p.host_bytes_per_node) + " per node";
  msg += "); this host has " + gib1(have) + " available";
  std::vector<Remedy> remedies = device_remedies(p);
  const double each = per_rank + p.host_bytes_per_rank;  // its device terms and its host RAM beside them
  if (p.ranks_on_node > 1)
    remedies.push_back({each * (p.ranks_on_node - 1), "run fewer ranks per node (each holds its own " + gib1(each) + ")"});
  if (p.checkpoint_snapshot > 0)
    remedies.push_back({p.checkpoint_snapshot * p.snapshot_owners_on_node, snapshot_remedy(p)});
  if (p.input.offload_optimizer != OffloadDevice::NVMe && p.input.optimizer)
    remedies.push_back({p.device_optimizer * p.ranks_on_node, "offload the optimizer to \"nvme\" (it holds " +
                                                                  gib1(p.device_optimizer) + " per rank)"});
  const std::string fix = largest_first(remedies);
  d.error("zero_optimization.stage", std::to_string(p.input.stage), msg, fix);
}

void check_gpu(const MemoryPlan& p, const MachineFacts& f, Diagnostics& d) {
  const double need = p.device_total();
  const double have = double(*f.gpu_free);
  if (need <= have) return;
  std::string msg = "ZeRO stage " + std::to_string(p.input.stage) + " needs " + gib1(need) +
                    " of GPU memory per rank for " + scale_of(p) + " (params " + gib1(p.device_params) +
                    ", grads " + gib1(p.device_grads) + ", optimizer " + gib1(p.device_optimizer) +
                    ", activations " + gib1(p.device_activations) + ", buffers " + gib1(p.device_buffers) +
                    "); this GPU has " + gib1(have) + " free of " + gib1(double(f.gpu_total.value_or(0)));
  std::vector<Remedy> remedies = device_remedies(p);
  if (p.input.offload_optimizer == OffloadDevice::None && p.input.optimizer)
    remedies.push_back({p.device_optimizer, "set offload_optimizer.device to \"cpu\" (the optimizer state is " +
                                                gib1(p.device_optimizer) + ")"});
  const std::string fix = largest_first(remedies);
  d.error("zero_optimization.stage", std::to_string(p.input.stage), msg, fix);
}

void check_nvme(const MemoryPlan& p, const std::string& nvme_path, Diagnostics& d) {
  const double need = p.nvme_bytes_per_node;
  const std::string key = p.input.offload_optimizer == OffloadDevice::NVMe
                              ? "zero_optimization.offload_optimizer.nvme_path"
                              : "zero_optimization.offload_param.nvme_path";
  if (nvme_path.empty()) {
    d.error(key, "", "device \"nvme\" needs " + sized(need) + " of NVMe space for " + scale_of(p) +
                         " but no nvme_path is set",
            "set nvme_path to a directory on a local NVMe drive");
    return;
  }
  const PathInfo info = probe_path(nvme_path);
  if (!info.exists) {
    d.error(key, nvme_path, "cannot check room for " + sized(need) + ": " + info.error,
            "create the directory on a local NVMe drive, or point nvme_path at one");
    return;
  }
  if (double(info.free_bytes) < need) {
    d.error(key, nvme_path,
            "offload to nvme needs " + sized(need) + " of free space for " + scale_of(p) + "; this " +
                info.fs_type + " file system has " + sized(double(info.free_bytes)) + " free",
            "free space there, use a larger drive, or spread the job over more nodes (each holds " +
                std::to_string(p.ranks_on_node) + " rank(s) × " + sized(p.nvme_bytes_per_rank) + ")");
  }
}

}  // namespace

Diagnostics preflight(const MemoryPlan& plan, const MachineFacts& facts, const std::string& nvme_path, bool nvme_here) {
  Diagnostics d;
  const bool gpu = facts.gpu_total.has_value() && facts.gpu_free.has_value();
  const bool ram_known = facts.host_mem_available > 0;
  if (!ram_known && (plan.host_bytes_per_node > 0 || !gpu)) {
    d.warning("host", "", "MemAvailable could not be read from /proc/meminfo, so host RAM was not checked",
              "check `free -g` by hand against the memory plan");
  }
  const bool host_short = ram_known && plan.host_bytes_per_node > double(facts.host_mem_available);
  if (ram_known && plan.host_bytes_per_node > 0) check_host_offload(plan, facts, d);
  // On the CPU backend the "device" is host RAM too; skip when offload alone already does not fit.
  if (ram_known && !gpu && !host_short) check_cpu_backend(plan, facts, d);
  if (gpu) check_gpu(plan, facts, d);
  if (plan.nvme_bytes_per_node > 0 && nvme_here) check_nvme(plan, nvme_path, d);
  return d;
}

}  // namespace zt
