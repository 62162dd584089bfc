// run_training: config, data and pre-flight checks first (all problems reported at once), the outputs
// opened, every rank agreeing on the run's fingerprint, then the engine's steps with rank 0's reports
// and monitors, validation every K steps, and a stop at a step boundary on SIGTERM/SIGINT.
#include "runtime/train/training_run.h"

#include "base/stage_traits.h"
#include <algorithm>
#include <cmath>
#include <cinttypes>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "collectives/rank_exchange.h"
#include "collectives/rank_list.h"
#include "offload/nvme_swapper.h"
#include "runtime/common/diagnostics.h"
#include "runtime/common/output_file.h"
#include "runtime/config/config_plan.h"
#include "runtime/config/config_echo.h"
#include "runtime/config/report.h"
#include "runtime/data/sampler.h"
#include "runtime/data/synthetic.h"
#include "runtime/engine/engine_checkpoint.h"
#include "runtime/engine/engine_plan.h"
#include "runtime/train/engine_config.h"
#include "runtime/model/causal_lm.h"
#include "runtime/monitor/run_reporter.h"
#include "runtime/plan/machine_probe.h"
#include "runtime/plan/process_memory.h"
#include "runtime/train/job_report.h"
#include "runtime/train/run_fingerprint.h"
#include "runtime/train/step_boundary.h"
#include "runtime/train/stop_signals.h"
#include "runtime/train/sampling.h"
#include "runtime/train/validation.h"

namespace zt {

namespace {

// The command line's own checks (the config's, the backend's and the engine's are in validation):
// appended to `d`, so that every problem of the start is reported at once.
void check_inputs(const RunOptions& run, const TokenDataset* data, Diagnostics& d) {
  const auto& m = run.model;
  if (run.eval_batches < 1)
    d.error("--eval-batches", std::to_string(run.eval_batches), "must be at least 1", "pass --eval-batches 1 or more");
  if (m.layers < 1 || m.heads < 1 || m.dim < 1 || m.vocab < 2 || m.seq_len < 1)
    d.error("--model", m.name, "layers, heads, dim, seq-len must be >= 1 and vocab >= 2", "fix the model flags");
  else if (!m.llama() && m.dim % m.heads != 0)  // a Llama shape is checked by resolve_model
    d.error("--dim", std::to_string(m.dim), "must be divisible by --heads " + std::to_string(m.heads),
            "pick a width that is a multiple of the head count");
  if (data) d.append(check_dataset(*data, m.seq_len, m.vocab));
  if (run.sample_every < 0)
    d.error("--sample-every", std::to_string(run.sample_every), "must be >= 0", "0 prints no samples");
  if (run.sample_every > 0 && (run.sample_tokens < 1 || run.sample_tokens >= m.seq_len))
    d.error("--sample-tokens", std::to_string(run.sample_tokens),
            "must be in [1, " + std::to_string(m.seq_len - 1) + "] (one prompt token and the rest of the context)",
            "ask for fewer tokens");
  if (!run.tokenizer.empty()) {
    try {
      const BpeTokenizer t = BpeTokenizer::load(run.tokenizer);
      if (t.vocab_size() > m.vocab)
        d.error("--tokenizer", run.tokenizer,
                "has " + std::to_string(t.vocab_size()) + " tokens, more than the model's vocabulary of " +
                    std::to_string(m.vocab),
                "give the tokenizer the data was prepared with");
    } catch (const UserError& e) {
      d.append(e.diagnostics());
    }
  }
}

// --sample-every: every rank gathers the weights (stages 1–3 hold shards), rank 0 generates from
// the tokenizer's document token (<|endoftext|>, <s>, ...), else the first token of the validation split, and
// prints one line.
// `codec` is made once for the run (the tokenizer read at start-up, on rank 0).
void print_sample(Engine& engine, Backend& backend, const TextCodec& codec, const RunOptions& run,
                  const TokenCorpus& val,
                  int64_t step, int rank, std::FILE* say) {
  std::vector<std::vector<float>> units;
  engine.for_each_full_master([&](int, const float* values, int64_t numel) {
    if (rank == 0 && say) units.emplace_back(values, values + numel);
  });
  if (rank != 0 || !say) return;
  SampleRequest request;
  const std::optional<int32_t> start = codec.start_of_text();
  request.prompt = {start ? *start : int32_t(val.tokens(0, 1).at(0))};
  request.tokens = run.sample_tokens;
  request.sampling =
      SamplingOptions{1.0, 0, run.seed + uint64_t(step), codec.tokenizer ? codec.tokenizer->vocab_size() : 0};
  request.stop = codec.end_of_text();
  std::string text;
  for (int32_t id : sample_from_weights(engine.model_config(), backend, units, request).tokens) text += codec.decode(id);
  // Ids, and text that starts with its own space (GPT-2's " the", Llama-2's "▁the"), take no second one.
  const std::string line = "sample (step " + std::to_string(step) + ", from token " + std::to_string(request.prompt[0]) +
                           "):" + (codec.ids_out || text.starts_with(' ') ? "" : " ") + text + "\n";
  std::fwrite(line.data(), 1, line.size(), say);  // the decoded bytes as they are (a NUL included)
}

// Start-up checks run on every rank (data, this machine's memory, the swap file); a rank that
// fails must not leave the others waiting in their first collective, so all ranks agree first.
bool any_rank_failed(Communicator& comm, Backend& backend, bool failed) {
  return RankExchange(comm, &backend).any_true(failed);
}

// What a checkpoint records of the run beside the engine's state (the data order is a function of
// the seed, the step and the global batch).
ckpt::RunFacts run_facts(const RunOptions& run, const Config& cfg, const EngineOptions& eo, int world_size,
                         const std::string& data) {
  ckpt::RunFacts f;
  f.model = run.model;
  f.config = config_to_json(cfg);
  f.seed = run.seed;
  f.micro_batch = eo.micro_batch;
  f.grad_accum = eo.grad_accum;
  f.global_batch = int64_t(world_size) * eo.micro_batch * eo.grad_accum;
  f.data = data;
  return f;
}

// The flags and the config's checkpoint block together; checkpoint I/O takes the aio block as the
// engine's NVMe offload does (one mapping: the engine options').
ckpt::CheckpointSettings checkpoint_settings(const RunOptions& run, const Config& cfg, const EngineOptions& eo) {
  ckpt::CheckpointSettings s = run.checkpoint;
  s.aio = eo.offload.state.aio;
  s.tag_validation = cfg.checkpoint.tag_validation.value;
  s.load_universal = cfg.checkpoint.load_universal.value;
  s.use_node_local_storage = cfg.checkpoint.use_node_local_storage.value;
  return s;
}

struct Started {
  Config cfg;
  TokenDataset data;
  MemoryPlan plan;
  EngineOptions eo;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<OutputFile> metrics, trace;  // rank 0's, opened before anything is allocated
  std::string warnings;                          // this rank's start-up warnings, as report lines
  ProcessMemory baseline;                        // resident at start-up, before the run's own memory
};

// Swap files of processes that died before they could unlink them would count against the space
// pre-flight checks: remove them first. Every rank scans (the ranks of a node race for the same
// files) and says what it removed.
void remove_stale_swap_files_of(const Config& c, int rank) {
  for (const OffloadConfig* off : {&c.zero_optimization.offload_optimizer, &c.zero_optimization.offload_param}) {
    if (off->device.value != "nvme" || off->nvme_path.value.empty()) continue;
    const offload::StaleSwapFiles r = offload::remove_stale_swap_files(off->nvme_path.value);
    if (!r.removed.empty())
      std::fprintf(stderr, "zerotrain: rank %d: removed %zu stale swap file(s) of exited processes from %s (%.1f MiB)\n",
                   rank, r.removed.size(), off->nvme_path.value.c_str(), double(r.bytes) / (1024.0 * 1024.0));
    for (const auto& f : r.failed)
      std::fprintf(stderr, "zerotrain: rank %d: warning: cannot remove stale swap file %s\n", rank, f.c_str());
  }
}

// Runs `step` on every rank; if it failed on any rank, every rank stops with the same exit code and
// the job prints each rank's errors once (rank 0; lines that differ carry their ranks).
template <class Step>
void on_every_rank(Communicator& comm, Backend& backend, Step step) {
  std::exception_ptr failure;
  try {
    step();
  } catch (...) {
    failure = std::current_exception();
  }
  if (!any_rank_failed(comm, backend, failure != nullptr)) return;
  if (comm.world_size() == 1) std::rethrow_exception(failure);  // the CLI prints it as for any process
  report_failure_once(comm, backend, failure);
}

// Phase 1: everything that can be checked before allocating: the config validated for this backend
// and model, the data, the command line — all reported together — then the pre-flight plan.
void check_start(Started& started, const RunOptions& run, Communicator& comm, Backend& backend) {
  const int W = comm.world_size(), rank = comm.rank();
  const ComputeBackend target = backend.name() == "cuda" ? ComputeBackend::Cuda : ComputeBackend::Cpu;
  Diagnostics problems;
  LoadResult loaded = load_run_config(run, W, target);
  problems.append(loaded.diagnostics);
  started.cfg = std::move(loaded.config);
  bool data_ok = true;
  try {
    started.data = run.data_dir.empty() && run.data_train.empty() && run.data_val.empty()
                  ? make_synthetic_dataset(run.seed)
                  : load_token_dataset(run.data_dir, run.data_train, run.data_val);
  } catch (const UserError& e) {
    problems.append(e.diagnostics());
    data_ok = false;
  }
  check_inputs(run, data_ok ? &started.data : nullptr, problems);
  if (problems.has_errors()) {
    // Reported with the rest; the checkpoint itself once the config is valid.
    ckpt::check_settings(run.checkpoint, problems);
    throw UserError(problems);
  }
  {
    // --load / --init-from: the checkpoint against this run, and the bytes this rank will load read
    // and checked, before anything is allocated.
    const EngineOptions eo = engine_options_from_config(started.cfg, run.seed, run.recompute, &run.model);
    const bool loads = !run.checkpoint.load_dir.empty() || !run.checkpoint.init_from.empty();
    if (const int s = eo.zero.mics_shard_size; s > 0 && eo.gather.mics_hierarchical) {
      // The two-level gather crosses nodes among same-local-index ranks, then runs inside each node:
      // a shard group of whole nodes, more than one.
      const int rpn = run.ranks_per_node > 0 ? run.ranks_per_node : W;
      const std::string v = std::to_string(s), n = std::to_string(rpn);
      if (s <= rpn)
        problems.error("zero_optimization.mics_hierarchical_params_gather", "true",
                       "each shard group of " + v + " ranks sits inside one node of " + n +
                           " ranks (--ranks-per-node): there is no inter-node level to gather over first",
                       "remove mics_hierarchical_params_gather (the flat gather already stays inside the node), or "
                       "set mics_shard_size to a multiple of " + n + " larger than it");
      else if (s % rpn != 0)
        problems.error("zero_optimization.mics_hierarchical_params_gather", "true",
                       "the shard groups of " + v + " ranks are not whole nodes of " + n +
                           " ranks (--ranks-per-node), so a node's part of a group has no same-local-index peers",
                       "set mics_shard_size to a multiple of " + n + ", or remove mics_hierarchical_params_gather");
    }
    if (problems.has_errors()) throw UserError(problems);
    ckpt::check_before_start(checkpoint_settings(run, started.cfg, eo),
                             run_facts(run, started.cfg, eo, W, started.data.description), dtype_name(eo.zero.precision),
                             eo.optimizer.type, eo.optimizer.momentum != 0.0, started.cfg.run_steps.value,
                             loads ? EnginePlan(run.model, eo, EnginePlan::capabilities_of(backend), W, rank)
                                         .checkpoint_needed_ranges()
                                   : std::vector<ElementRange>{},
                             problems);
    if (problems.has_errors()) throw UserError(problems);
  }
  remove_stale_swap_files_of(started.cfg, rank);
  // Pre-flight: the plan against this machine, before the engine allocates anything.
  started.eo = engine_options_from_config(started.cfg, run.seed, run.recompute, &run.model);
  if (const int64_t hpz = started.eo.gather.hpz_partition_size; hpz > 1 && stage_traits(started.eo.zero.stage).gathers_params()) {
    // The secondary groups are hpz consecutive ranks: inside one node of run.ranks_per_node.
    const int rpn = run.ranks_per_node > 0 ? run.ranks_per_node : W;  // 0: every rank on one node
    const std::string v = std::to_string(hpz), n = std::to_string(rpn);
    if (hpz > rpn || rpn % hpz != 0)
      problems.error("zero_optimization.zero_hpz_partition_size", v,
                     "each secondary group of " + v + " consecutive ranks must sit inside one node, and a node here has " +
                         n + " ranks (--ranks-per-node): backward's gathers would cross nodes",
                     "use the ranks per node (" + n + ") or a divisor of it");
    else if (hpz < rpn)
      problems.warning("zero_optimization.zero_hpz_partition_size", v,
                       "smaller than the " + n + " ranks of a node: each secondary slice is 1/" + v + " of a unit where a "
                           "node-wide group would keep 1/" + n,
                       "set it to the ranks per node (" + n + ") unless memory is no concern");
  }
  if (started.eo.reduce.quantized_gradients && W > 1) {
    const int rpn = run.ranks_per_node > 0 ? run.ranks_per_node : W;  // 0: every rank on one node
    if (rpn >= W)
      problems.warning("zero_optimization.zero_quantized_gradients", "true",
                       "every one of the " + std::to_string(W) + " ranks is on one node (--ranks-per-node " +
                           std::to_string(rpn) + "): qgZ only quantizes what crosses nodes, so it is off and the "
                           "gradients are reduced exactly (DeepSpeed does the same without a word)",
                       "remove zero_quantized_gradients, or pass --ranks-per-node for a job spanning nodes");
  }
  PlanInput plan_in = plan_input(started.cfg, run.model.total_params(), &run.model, run.local_ranks);
  plan_in.activation_checkpointing = run.recompute;  // the run recomputes with --recompute only, whatever the block says
  plan_in.emulates_16bit_in_fp32 = target == ComputeBackend::Cpu;
  plan_in.backend_is_host = target == ComputeBackend::Cpu;
  // What the engine will keep, split and reserve: the one plan it will be built from.
  const EnginePlan engine_plan(run.model, started.eo, EnginePlan::capabilities_of(backend), W, rank);
  plan_in.comm_buffer_bytes = engine_plan.comm_buffer_bytes(comm);  // as the engine reserves
  plan_in.comm_device_bytes = comm.device_buffer_bytes();
  plan_in.unit_buffer_bytes = double(engine_plan.unit_buffer_bytes(dtype_size(backend.act_dtype())));
  plan_in.optimizer_extra_bytes = engine_plan.optimizer_extra_bytes();
  if (started.baseline.known) plan_in.process_baseline = started.baseline.rss;
  if (!run.checkpoint.save_dir.empty()) {
    plan_in.checkpoint_snapshot_bytes = engine_plan.checkpoint_snapshot_bytes();
    plan_in.save_dir = run.checkpoint.save_dir;
  }
  const int micro_batch = int(started.cfg.train_micro_batch_size_per_gpu.value);
  plan_in.activation_bytes = double(causal_lm_activation_bytes_for(
      run.model, ModelRunOptions{micro_batch, run.recompute}, dtype_size(backend.act_dtype()),
      backend.attention_saved_bytes(micro_batch, run.model.seq_len, int(run.model.attention_width()),
                                    run.model.heads)));
  started.plan = make_memory_plan(plan_in);
  problems.append(
      preflight(started.plan, probe_machine(), plan_nvme_path(started.cfg)));  // the parameters' path when only they swap
  if (problems.has_errors()) throw UserError(problems);
  started.warnings = format_report(problems);  // printed once for the job when every rank has started
  started.eo.trace = !run.trace_path.empty() && comm.rank() == 0;
  started.eo.ranks_per_node = run.ranks_per_node;
  if (rank == 0 && !run.metrics_path.empty())
    started.metrics = std::make_unique<OutputFile>("--metrics", run.metrics_path);
  if (rank == 0 && !run.trace_path.empty()) started.trace = std::make_unique<OutputFile>("--trace", run.trace_path);
}

// Phase 2: the allocations (engine buffers, the NVMe swap file).
void allocate_start(Started& started, const RunOptions& run, Communicator& comm, Backend& backend) {
  const std::string source = run.config_path.empty() ? "<built-in config>" : run.config_path;
  try {
    started.engine = std::make_unique<Engine>(run.model, started.eo, backend, comm);
  } catch (const UserError&) {
    throw;
  } catch (const std::invalid_argument& e) {
    // Validation refuses every option the engine cannot run; reaching this is a bug to report.
    throw std::logic_error("internal error: the engine refused options that validation accepted (" + source +
                           "): " + e.what());
  } catch (const std::runtime_error& e) {
    // Not an option problem: I/O at allocation time (the NVMe swap file: fallocate, O_DIRECT, ...).
    // An NVMe swap file: the message names the path, the errno and the fix.
    const EngineOptions& eo = started.eo;
    if (eo.zero.offload_optimizer == OffloadDevice::NVMe)
      throw UserError("zero_optimization.offload_optimizer.nvme_path", eo.offload.state.nvme_path, e.what());
    if (eo.zero.offload_param == OffloadDevice::NVMe)
      throw UserError("zero_optimization.offload_param.nvme_path", eo.offload.params.nvme_path, e.what());
    throw;
  }
}

}  // namespace

RunReport run_training(const RunOptions& run, Communicator& comm, Backend& backend, std::FILE* out) {
  const int W = comm.world_size(), rank = comm.rank();
  std::FILE* say = (rank == 0 && run.print) ? out : nullptr;
  // Monitors, comms logger and flops profiler: checked and made before the engine (so they are
  // declared first: destroyed after it).
  RunInstruments instruments;
  StopSignals signals(rank == 0);  // SIGTERM / SIGINT: stop at the next step boundary; rank 0 says so
  Started started;
  // What the process holds before the run reads or allocates anything: the binary, its libraries,
  // MPI, the backend's threads. Its own row in the plan; the ledger counts everything after it.
  started.baseline = read_process_memory();
  on_every_rank(comm, backend, [&] { check_start(started, run, comm, backend); });
  on_every_rank(comm, backend, [&] {
    agree_on_fingerprint(make_run_fingerprint(run, started.cfg, started.data, backend), comm, backend);
  });
  print_once(comm, backend, started.warnings, stderr);
  on_every_rank(comm, backend, [&] {
    instruments = RunInstruments::make(started.cfg, run.model, started.eo.micro_batch, started.eo.grad_accum,
                                       started.cfg.run_steps.value, rank, W, backend);
  });
  on_every_rank(comm, backend, [&] { allocate_start(started, run, comm, backend); });
  const TokenDataset& data = started.data;
  const EngineOptions& eo = started.eo;
  Engine& engine = *started.engine;
  std::string setup_warnings;
  for (const auto& warning : engine.setup_warnings()) setup_warnings += "warning: " + warning + "\n";
  print_once(comm, backend, setup_warnings, stderr);

  RunReport rep;
  rep.params = engine.params();
  rep.stage = eo.zero.stage;
  rep.unigram_entropy = unigram_entropy(data.train);
  const int64_t steps = started.cfg.run_steps.value;
  const int T = run.model.seq_len;
  if (say && eo.zero.offload_optimizer == OffloadDevice::CPU && backend.name() == "cpu")
    std::fprintf(say,
                 "note: offload_optimizer=cpu on the cpu backend: the optimizer state is kept apart from the "
                 "backend's memory and moved in chunks as on a GPU (both are host RAM here)\n");
  if (say && eo.zero.offload_optimizer == OffloadDevice::NVMe)
    std::fprintf(say, "optimizer state paged to NVMe under %s (sub-groups of %lld elements, %d buffers)\n",
                 eo.offload.state.nvme_path.c_str(), (long long)eo.sub_group_size, eo.offload.state.buffer_count);
  ReportSetup rs;
  rs.cfg = &started.cfg;
  rs.eo = &eo;
  rs.plan = &started.plan;
  rs.model = &run.model;
  rs.config_name = run.config_path.empty() ? "built-in config" : run.config_path;
  rs.data_description = data.description;
  rs.metrics_path = run.metrics_path;
  rs.trace_path = run.trace_path;
  if (!run.checkpoint.save_dir.empty())
    rs.checkpoints = "-> " + run.checkpoint.save_dir + " (" +
                     (run.checkpoint.save_every > 0 ? "every " + std::to_string(run.checkpoint.save_every) + " steps, " : "") +
                     "at the end and on SIGTERM/SIGINT)";
  rs.steps = steps;
  if (run.evaluate_only) rs.run_length = "no steps: the loss of " + run.checkpoint.init_from + "'s weights over the whole validation split";
  rs.say = say;
  rs.process_baseline = started.baseline.rss;
  rs.metrics = started.metrics.get();
  rs.trace_file = started.trace.get();
  RunReporter reporter(rs, engine, comm, backend, instruments);

  // Checkpoints: made before the start record so that the writer's snapshot, held from here, is on
  // the ledger the record reports (--load and --init-from run below, once the record is written).
  EngineCheckpoint ckpt_state(engine, run.model);
  std::unique_ptr<ckpt::CheckpointManager> checkpoints;
  on_every_rank(comm, backend, [&] {
    checkpoints = std::make_unique<ckpt::CheckpointManager>(ckpt_state, comm, &backend,
                                                     run_facts(run, started.cfg, eo, W, data.description),
                                                     checkpoint_settings(run, started.cfg, eo), say);
  });
  engine.count_host_memory(MemCategory::Checkpoint, checkpoints->snapshot_bytes());

  BatchSampler train_sampler(data.train, T, run.seed, data.train_source);
  const BatchSampler val_sampler(data.val, T, run.seed, data.val_source);
  const BatchGeometry geom{W, eo.micro_batch, eo.grad_accum};
  // The first eval_batches·W·M windows of the split (the whole split for zerotrain eval).
  auto validate = [&](int64_t step) {
    const int64_t windows = run.evaluate_only ? val_sampler.num_windows() : int64_t(run.eval_batches) * W * eo.micro_batch;
    const ValidationResult result = validate_windows(engine, val_sampler, T, geom, rank, windows);
    rep.val_losses.emplace_back(step, result.sums.mean());
    rep.val_tokens = result.sums.tokens;
    rep.val_windows = result.windows;
    if (!run.evaluate_only) reporter.validation(step, result.sums.mean());  // eval prints its own line
  };

  // The first write: a file that cannot be written (--metrics /dev/full) stops every rank here.
  on_every_rank(comm, backend, [&] {
    try {
      reporter.start();
    } catch (const OutputError& e) {
      throw UserError(started.metrics->flag(), started.metrics->path(), e.what(),
                      "give a path on a file system with room to write");
    }
  });

  // Checkpoints: --load or --init-from now (collective; bad input stops every rank before any state
  // is written), saves after the steps --save-every names and at the end.
  int64_t first = 0;
  on_every_rank(comm, backend, [&] { first = checkpoints->start(); });
  if (say)
    for (const auto& warning : ckpt_state.warnings().all())
      std::fprintf(say, "%s\n", format_diagnostic(warning).c_str());
  rep.first_step = first;
  if (run.evaluate_only) {
    validate(first);
    const double loss = rep.val_losses.back().second;
    if (say)
      std::fprintf(say, "eval: loss %.6f, perplexity %.4f, over %lld tokens: the whole validation split (%lld windows of "
                        "%d) of %s, on %d rank(s)\n",
                   loss, std::exp(loss), (long long)rep.val_tokens, (long long)rep.val_windows, T,
                   data.description.c_str(), W);
    return rep;
  }
  auto saved_tags = [&] {
    for (const auto& save : checkpoints->saves())
      if (save.ok && std::find(rep.checkpoints.begin(), rep.checkpoints.end(), save.tag_dir) == rep.checkpoints.end())
        rep.checkpoints.push_back(save.tag_dir);
  };

  // --sample-every's text: the tokenizer was checked on every rank at start-up; rank 0 keeps it.
  TextCodec sample_codec;
  if (say && run.sample_every > 0 && !run.tokenizer.empty())
    sample_codec.tokenizer = std::make_unique<BpeTokenizer>(BpeTokenizer::load(run.tokenizer));
  sample_codec.ids_out = !sample_codec.tokenizer;

  std::vector<double> rates;
  StepBoundary boundary(comm, backend);
  StopDecision stopped;
  int64_t stopped_at = 0;
  std::exception_ptr output_error;  // rank 0's failed metrics write: every rank stops at the boundary
  try {
    for (int64_t step = first; step < steps; ++step) {
      reporter.before_step(step + 1);
      const StepStats stats = engine.train_step(
          [&](int micro, int32_t* tok, int32_t* tgt) { train_sampler.fill(step, geom, rank, micro, tok, tgt); });
      if (!output_error) try {
        const double rate = reporter.after_step(stats);
        if (step > first || steps - first == 1) rates.push_back(rate);
      } catch (const OutputError&) {
        output_error = std::current_exception();
      }
      rep.losses.push_back(stats.loss);
      if (run.eval_every > 0 && (step + 1) % run.eval_every == 0 && step + 1 < steps) validate(step + 1);
      if (run.sample_every > 0 && (step + 1) % run.sample_every == 0)
        print_sample(engine, backend, sample_codec, run, data.val, step + 1, rank, say);
      checkpoints->after_step(step + 1);
      stopped = boundary.agree(signals.pending(), output_error != nullptr);
      if (stopped.stop()) {
        stopped_at = step + 1;
        break;
      }
    }
    if (!stopped.stop()) {
      validate(steps);
      reporter.training_done();
    }
  } catch (const AgreedUserError&) {
    // Every rank is here with the same error (checkpoint.tag_validation "Fail"): print it once and
    // stop every rank with exit 2.
    if (W == 1) throw;
    report_failure_once(comm, backend, std::current_exception(), "every rank stopped during training");
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
  if (output_error) std::rethrow_exception(output_error);
  if (!stopped.output_failed.empty())
    throw OutputError("stopped after step " + std::to_string(stopped_at) + " because " +
                      rank_list(stopped.output_failed) + " could not write its output (its error says why)");
  if (stopped.stop()) {
    // A stop signal: every rank is at the same boundary; the checkpoint (when there is one) goes here.
    rep.stop_signal = stopped.signal;
    rep.steps_done = stopped_at;
    rep.checkpoint_saved = save_before_stop(*checkpoints, stopped_at, say);
    saved_tags();
    const std::string saved = rep.checkpoint_saved ? "checkpoint " + rep.checkpoints.back() + " saved (resume with --load " +
                                                         run.checkpoint.save_dir + ")"
                              : checkpoints->saving() ? "no checkpoint was written (the save failed: see above)"
                                               : "no checkpoint was written (no --save DIR was given)";
    if (say)
      std::fprintf(say, "stopped: %s reached %s; every rank stopped after step %lld of %lld; %s\n",
                   stop_signal_name(stopped.signal), rank_list(stopped.signalled).c_str(), (long long)stopped_at,
                   (long long)steps, saved.c_str());
    reporter.stopped(stopped_at, stop_signal_name(stopped.signal), rep.checkpoint_saved);
    return rep;
  }
  // The final save (waited for); a failure is a UserError on every rank: the run must not end as if saved.
  checkpoints->at_end(steps);
  rep.steps_done = steps;
  saved_tags();
  rep.summary = engine.param_summary();
  reporter.finish(steps, rep.val_losses.back().second, rep.unigram_entropy, rep.tokens_per_s, rep.summary);
  return rep;
}

}  // namespace zt
