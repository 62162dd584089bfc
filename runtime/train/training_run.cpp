// run_training: config, data and pre-flight checks first (all problems reported at once), then the
// engine's steps with rank 0's reports (steps_per_print, wall_clock_breakdown, memory_breakdown),
// validation every K steps, and the metrics file's start / step / end records.
#include "runtime/train/training_run.h"

#include <algorithm>
#include <cinttypes>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "runtime/common/diagnostics.h"
#include "runtime/config/config_plan.h"
#include "runtime/data/sampler.h"
#include "runtime/data/synthetic.h"
#include "runtime/engine/engine_config.h"
#include "runtime/plan/machine_probe.h"

namespace zt {

namespace {

void check_inputs(const RunOptions& o, const Config& c, const TokenDataset& data, const Backend& backend) {
  Diagnostics d;
  const auto& m = o.model;
  if (run_steps(o) < 1) d.error("--steps", std::to_string(run_steps(o)), "must be at least 1");
  if (o.eval_batches < 1) d.error("--eval-batches", std::to_string(o.eval_batches), "must be at least 1");
  if (m.layers < 1 || m.heads < 1 || m.dim < 1 || m.vocab < 2 || m.seq_len < 1)
    d.error("--model", m.name, "layers, heads, dim, seq-len must be >= 1 and vocab >= 2");
  else if (m.dim % m.heads != 0)
    d.error("--dim", std::to_string(m.dim), "must be divisible by --heads " + std::to_string(m.heads),
            "pick a width that is a multiple of the head count");
  if (m.vocab < data.vocab)
    d.error("--vocab", std::to_string(m.vocab), "smaller than the data's vocabulary (" + std::to_string(data.vocab) + ")",
            "use --vocab " + std::to_string(data.vocab) + " or a larger preset");
  const auto& z = c.zero_optimization;
  if (z.offload_param.device.value != "none" && backend.act_dtype() != DType::F32)
    d.error("zero_optimization.offload_param.device", "\"" + z.offload_param.device.value + "\"",
            "parameter offload is not wired into the CUDA path yet (on the cpu backend it works)",
            "use \"none\" with --backend cuda");
  if (backend.act_dtype() != DType::F32 && !c.bf16_enabled())
    d.error("bf16.enabled", c.fp16_enabled() ? "false (fp16 enabled)" : "false",
            std::string("the ") + backend.name() + " backend computes in bf16",
            "set \"bf16\": {\"enabled\": true}, or run fp32/fp16 on --backend cpu");
  if (d.has_errors()) throw UserError(d);
}

std::string gib(uint64_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f GiB", double(bytes) / double(1ull << 30));
  return b;
}

std::string hex64(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%016" PRIx64, v);
  return b;
}

nlohmann::json comm_json(const StepStats& st) {
  return {{"all_reduce", st.comm_bytes[int(CommOp::AllReduce)]},
          {"reduce_scatter", st.comm_bytes[int(CommOp::ReduceScatter)]},
          {"all_gather", st.comm_bytes[int(CommOp::AllGather)]}};
}

// Start-up checks run on every rank (data, this machine's memory, the swap file); a rank that
// fails must not leave the others waiting in their first collective, so all ranks agree first.
bool any_rank_failed(Communicator& comm, Backend& backend, bool failed) {
  if (comm.world_size() == 1) return failed;
  int64_t flag = failed ? 1 : 0;
  void* buf = backend.alloc(sizeof flag);
  backend.copy_to_device(buf, &flag, sizeof flag);
  comm.all_reduce(buf, buf, 1, DType::I64, ReduceOp::Sum);
  backend.copy_to_host(&flag, buf, sizeof flag);
  backend.free(buf);
  return flag > 0;
}

struct Started {
  Config cfg;
  TokenDataset data;
  MemoryPlan plan;
  EngineOptions eo;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<std::ofstream> metrics;
};

// Runs `step` on every rank; if it failed on any rank, every rank stops: the failing ones with
// their own errors, the others saying so.
template <class Step>
void on_every_rank(Communicator& comm, Backend& backend, Step step) {
  std::exception_ptr failure;
  try {
    step();
  } catch (...) {
    failure = std::current_exception();
  }
  if (any_rank_failed(comm, backend, failure != nullptr)) {
    if (failure) std::rethrow_exception(failure);
    throw UserError("rank " + std::to_string(comm.rank()), "", "stopped because another rank could not start",
                    "read that rank's errors above");
  }
}

// Phase 1: everything that can be checked before allocating (config, data, pre-flight).
void check_start(Started& st, const RunOptions& o, Communicator& comm, Backend& backend) {
  const int W = comm.world_size(), rank = comm.rank();
  st.cfg = load_run_config(o, W, rank == 0 ? stderr : nullptr);
  st.data = o.data_dir.empty() ? make_synthetic_dataset(o.seed) : load_token_dataset(o.data_dir);
  check_inputs(o, st.cfg, st.data, backend);
  // Pre-flight: the plan against this machine, before the engine allocates anything.
  st.plan = make_memory_plan(plan_input(st.cfg, o.model.total_params(), &o.model, o.local_ranks));
  const Diagnostics pre = preflight(st.plan, probe_machine(), st.cfg.zero_optimization.offload_optimizer.nvme_path.value);
  if (pre.has_errors()) throw UserError(pre);
  try {
    st.eo = engine_options_from_config(st.cfg, o.seed, o.recompute);
    st.eo.trace = !o.trace_path.empty() && comm.rank() == 0;
  } catch (const std::invalid_argument& e) {
    throw UserError(o.config_path.empty() ? "<built-in config>" : o.config_path, "", e.what(),
                    "see configs/README.md for what the engine supports");
  }
}

// Phase 2: the allocations (engine buffers, the NVMe swap file) and the metrics file.
void allocate_start(Started& st, const RunOptions& o, Communicator& comm, Backend& backend) {
  const std::string source = o.config_path.empty() ? "<built-in config>" : o.config_path;
  try {
    st.engine = std::make_unique<Engine>(o.model, st.eo, backend, comm);
  } catch (const UserError&) {
    throw;
  } catch (const std::invalid_argument& e) {
    throw UserError(source, "", e.what(), "see configs/README.md for what the engine supports");
  } catch (const std::runtime_error& e) {
    // An NVMe swap file: the message names the path, the errno and the fix.
    const auto& off = st.eo.offload;
    if (off.optimizer == OffloadDevice::NVMe)
      throw UserError("zero_optimization.offload_optimizer.nvme_path", off.nvme_path, e.what());
    if (off.param == OffloadDevice::NVMe)
      throw UserError("zero_optimization.offload_param.nvme_path", off.param_nvme_path, e.what());
    throw;
  }
  if (comm.rank() == 0 && !o.metrics_path.empty()) {
    st.metrics = std::make_unique<std::ofstream>(o.metrics_path);
    if (!*st.metrics)
      throw UserError("--metrics", o.metrics_path, "cannot open the metrics file for writing",
                      "give a path in an existing, writable directory");
  }
}

}  // namespace

RunReport run_training(const RunOptions& o, Communicator& comm, Backend& backend, std::FILE* out) {
  const int W = comm.world_size(), rank = comm.rank();
  std::FILE* say = (rank == 0 && o.print) ? out : nullptr;
  Started started;
  on_every_rank(comm, backend, [&] { check_start(started, o, comm, backend); });
  on_every_rank(comm, backend, [&] { allocate_start(started, o, comm, backend); });
  const Config& cfg = started.cfg;
  const TokenDataset& data = started.data;
  const MemoryPlan& plan = started.plan;
  const EngineOptions& eo = started.eo;
  Engine& engine = *started.engine;
  std::unique_ptr<std::ofstream>& metrics = started.metrics;

  RunReport rep;
  rep.params = engine.params();
  rep.stage = eo.stage;
  rep.unigram_entropy = unigram_entropy(data.train);
  const int64_t steps = run_steps(o);
  const int T = o.model.seq_len;
  const double tokens_per_step = double(eo.micro_batch) * eo.grad_accum * W * T;
  if (say && eo.offload.optimizer == OffloadDevice::CPU && backend.name() == "cpu")
    std::fprintf(say,
                 "note: offload_optimizer=cpu on the cpu backend: the optimizer state is kept apart from the "
                 "backend's memory and moved in chunks as on a GPU (both are host RAM here)\n");
  if (say && eo.offload.optimizer == OffloadDevice::NVMe)
    std::fprintf(say, "optimizer state paged to NVMe under %s (sub-groups of %lld elements, %d buffers)\n",
                 eo.offload.nvme_path.c_str(), (long long)eo.sub_group_size, eo.offload.buffer_count);
  if (say) {
    std::fprintf(say,
                 "zerotrain: %s on %d rank(s), backend %s, stage %d, %s | model %s: %d layers, dim %d, vocab %d, "
                 "seq %d, %" PRId64 " params | micro batch %d x accum %d x world %d = %lld samples/step | data: %s\n",
                 o.config_path.empty() ? "built-in config" : o.config_path.c_str(), W, backend.name().c_str(),
                 eo.stage, dtype_name(eo.precision), o.model.name.c_str(), o.model.layers, o.model.dim,
                 o.model.vocab, o.model.seq_len, rep.params, eo.micro_batch, eo.grad_accum, W,
                 (long long)eo.micro_batch * eo.grad_accum * W, data.description.c_str());
    std::fprintf(say, "memory plan (per rank):\n%s", plan_to_table(plan).c_str());
    const auto& a = engine.ledger().current();
    std::fprintf(say, "allocated (rank 0): params %s, grads %s, master %s, optimizer %s, activations %s, buffers %s\n",
                 gib(a[MemCategory::Params]).c_str(), gib(a[MemCategory::Grads]).c_str(),
                 gib(a[MemCategory::Master]).c_str(), gib(a[MemCategory::Optimizer]).c_str(),
                 gib(a[MemCategory::Activations]).c_str(), gib(a[MemCategory::CommBuffers]).c_str());
    const auto& h = engine.ledger().host();
    if (h.total() > 0)
      std::fprintf(say, "host (rank 0, offload): params %s, master %s, optimizer %s, buffers %s\n",
                   gib(h[MemCategory::Params]).c_str(), gib(h[MemCategory::Master]).c_str(),
                   gib(h[MemCategory::Optimizer]).c_str(), gib(h[MemCategory::CommBuffers]).c_str());
  }
  if (metrics) {
    *metrics << nlohmann::json{{"event", "start"},
                               {"world_size", W},
                               {"stage", eo.stage},
                               {"params", rep.params},
                               {"precision", dtype_name(eo.precision)},
                               {"plan", plan_to_json(plan)},
                               {"allocated", mem_counts_json(engine.ledger().current())},
                               {"allocated_host", mem_counts_json(engine.ledger().host())}}
                    .dump()
             << "\n";
  }

  BatchSampler train_sampler(data.train, T, o.seed);
  const BatchSampler val_sampler(data.val, T, o.seed);
  const BatchGeometry geom{W, eo.micro_batch, eo.grad_accum};
  auto validate = [&](int64_t step) {
    const int64_t windows = std::max<int64_t>(1, val_sampler.num_windows() - eo.micro_batch);
    const double val = engine.evaluate(
        [&](int micro, int32_t* tok, int32_t* tgt) {
          const int64_t first = (int64_t(micro) * W + rank) * eo.micro_batch % windows;
          val_sampler.fill_sequential(first, eo.micro_batch, tok, tgt);
        },
        o.eval_batches);
    rep.val_losses.emplace_back(step, val);
    if (say) std::fprintf(say, "eval  step %6lld | val loss %.4f\n", (long long)step, val);
  };

  std::vector<double> rates;
  const int64_t every = std::max<int64_t>(1, cfg.steps_per_print.value);
  try {
    for (int64_t s = 0; s < steps; ++s) {
      const StepStats st = engine.train_step(
          [&](int micro, int32_t* tok, int32_t* tgt) { train_sampler.fill(s, geom, rank, micro, tok, tgt); });
      const double rate = tokens_per_step / st.seconds;
      if (s > 0 || steps == 1) rates.push_back(rate);
      rep.losses.push_back(st.loss);
      if (say && (st.step == 1 || st.step % every == 0 || st.step == steps)) {
        std::fprintf(say, "step  %6lld | loss %.4f | lr %.3e | grad norm %.3f%s | skipped %lld | %.0f tokens/s | peak %s\n",
                     (long long)st.step, st.loss, st.lr, st.grad_norm, st.skipped ? " (skipped)" : "",
                     (long long)st.skipped_total, rate, gib(st.mem_peak).c_str());
        if (cfg.wall_clock_breakdown.value)
          std::fprintf(say, "        time | step %.1f ms: forward %.1f, backward %.1f, reduce wait %.1f, gather wait %.1f, "
                            "optimizer %.1f\n",
                       1e3 * st.seconds, 1e3 * st.forward_s, 1e3 * st.backward_s, 1e3 * st.reduce_wait_s,
                       1e3 * st.gather_wait_s, 1e3 * st.optimizer_s);
        if (cfg.memory_breakdown.value)
          std::fprintf(say, "      memory | %s\n", mem_counts_json(engine.ledger().peak_by_category()).dump().c_str());
      }
      if (metrics)
        *metrics << nlohmann::json{{"event", "step"},      {"step", st.step},          {"loss", st.loss},
                                   {"lr", st.lr},          {"grad_norm", st.grad_norm}, {"loss_scale", st.loss_scale},
                                   {"skipped", st.skipped}, {"step_ms", 1e3 * st.seconds},
                                   {"tokens_per_s", rate}, {"comm_bytes", comm_json(st)}, {"mem_peak", st.mem_peak}}
                        .dump()
                 << std::endl;  // flushed: a run that dies later keeps its steps
      if (o.eval_every > 0 && (s + 1) % o.eval_every == 0 && s + 1 < steps) validate(s + 1);
    }
    validate(steps);
  } catch (const std::exception& e) {
    if (W == 1) throw;
    // The other ranks are inside a collective this rank will never join: end the whole job now
    // (the launcher kills them) rather than let them wait for the watchdog.
    std::fprintf(stderr, "zerotrain: rank %d: %s\nzerotrain: rank %d: aborting the job\n", rank, e.what(), rank);
    std::fflush(stderr);
    std::abort();
  }
  std::sort(rates.begin(), rates.end());
  rep.tokens_per_s = rates.empty() ? 0 : rates[rates.size() / 2];
  rep.summary = engine.param_summary();
  if (engine.trace()) {
    engine.trace()->write(o.trace_path, rank);
    if (say) std::fprintf(say, "trace: %zu spans written to %s\n", engine.trace()->size(), o.trace_path.c_str());
  }
  if (say)
    std::fprintf(say, "done: %lld steps, final val loss %.4f (unigram entropy %.3f), median %.0f tokens/s, "
                      "param checksum %s, param L2 %.6f\n",
                 (long long)steps, rep.val_losses.back().second, rep.unigram_entropy, rep.tokens_per_s,
                 hex64(rep.summary.checksum).c_str(), rep.summary.l2);
  if (metrics)
    *metrics << nlohmann::json{{"event", "end"},
                               {"steps", steps},
                               {"param_checksum", hex64(rep.summary.checksum)},
                               {"param_l2", rep.summary.l2},
                               {"val_loss", rep.val_losses.back().second}}
                    .dump()
             << "\n";
  return rep;
}

}  // namespace zt
