// RunReporter: rank 0's console lines, the metrics JSON lines, the monitors' events, the comms
// logger's per-step lines and summary, the flops profile and the hidden-communication share.
#include "runtime/monitor/run_reporter.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <tuple>

#include "base/stage_traits.h"
#include "runtime/config/config_echo.h"
#include "runtime/monitor/comm_overlap.h"
#include "runtime/zero/quantized_reduce.h"

namespace zt {

namespace {

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

std::string duration(double s) {
  char b[32];
  if (s < 60)
    std::snprintf(b, sizeof b, "%.0fs", s);
  else if (s < 3600)
    std::snprintf(b, sizeof b, "%dm%02ds", int(s) / 60, int(s) % 60);
  else
    std::snprintf(b, sizeof b, "%dh%02dm", int(s) / 3600, (int(s) % 3600) / 60);
  return b;
}

// Per collective: this step's algorithm bytes (comm_bytes) or calls (comm_calls: buckets show here).
nlohmann::json comm_json(const uint64_t (&per_op)[kCommOpCount]) {
  return {{"all_reduce", per_op[int(CommOp::AllReduce)]},
          {"reduce_scatter", per_op[int(CommOp::ReduceScatter)]},
          {"all_gather", per_op[int(CommOp::AllGather)]},
          {"all_to_all", per_op[int(CommOp::AllToAll)]}};
}

// The split groups that carried anything this step (MiCS's shard, replica, cross, node; hpZ's
// secondary): each one's bytes and calls, which comm_bytes / comm_calls include.
nlohmann::json groups_json(const StepTraffic& t) {
  nlohmann::json out = nlohmann::json::object();
  for (int r = 1; r < kCommRoleCount; ++r) {
    const GroupTraffic& g = t.by_role[r];
    uint64_t calls = 0;
    for (uint64_t c : g.calls) calls += c;
    if (calls > 0) out[comm_role_name(CommRole(r))] = {{"bytes", comm_json(g.bytes)}, {"calls", comm_json(g.calls)}};
  }
  return out;
}

double busy_seconds(const CommStats& s) {
  double t = 0;
  for (const auto& o : s.op) t += o.busy_seconds;
  return t;
}

}  // namespace

RunInstruments RunInstruments::make(const Config& c, const ModelConfig& model, int micro_batch, int grad_accum,
                                    int64_t steps, int rank, int world_size, Backend& backend) {
  Diagnostics d;
  CommsLogger::check(c.comms_logger, d);
  FlopsProfiler::check(c.flops_profiler, steps, d);
  RunInstruments r;
  r.monitors = Monitors::from_config(c, rank == 0, d);
  if (d.has_errors()) throw UserError(d);
  if (rank == 0 && d.warning_count() > 0) std::fputs(d.format().c_str(), stderr);
  if (c.flops_profiler.enabled.value && rank == 0) {
    r.profiler = std::make_unique<FlopsProfiler>(c.flops_profiler, model, micro_batch, grad_accum, world_size,
                                                 device_peak(backend, micro_batch * model.seq_len, model.dim));
  }
  return r;
}

RunReporter::RunReporter(ReportSetup setup, Engine& engine, Communicator& comm, Backend& backend,
                         RunInstruments& instruments)
    : s_(std::move(setup)), engine_(engine), comm_(comm), backend_(backend), inst_(instruments),
      comms_(s_.cfg->comms_logger, comm.world_size(), comm.stats()), process_(comm, backend, s_.process_baseline),
      world_(comm.world_size()) {
  const EngineOptions& eo = *s_.eo;
  samples_per_step_ = int64_t(eo.micro_batch) * eo.grad_accum * world_;
  tokens_per_step_ = double(samples_per_step_) * s_.model->seq_len;
}

RunReporter::~RunReporter() {
  if (inst_.profiler) backend_.attach_op_recorder(nullptr);
}

void RunReporter::record(const nlohmann::json& j) {
  if (!s_.metrics || metrics_failed_) return;
  try {
    s_.metrics->line(j.dump());  // written through: a run that dies later keeps its steps
  } catch (const OutputError&) {
    metrics_failed_ = true;  // the caller stops the run at the step boundary
    throw;
  }
}

void RunReporter::write_trace() {
  const Trace* t = engine_.trace();
  if (!t || !s_.trace_file) return;
  s_.trace_file->line(t->to_json(comm_.rank()).dump());
  s_.trace_file->close();
  if (s_.say) std::fprintf(s_.say, "trace: %zu spans written to %s\n", t->size(), s_.trace_path.c_str());
}

void RunReporter::stopped(int64_t step, const char* signal, bool checkpoint_saved) {
  write_trace();
  record({{"event", "stopped"}, {"step", step}, {"signal", signal}, {"checkpoint", checkpoint_saved}});
  if (s_.metrics && !metrics_failed_) s_.metrics->close();
}

std::string RunReporter::header() const {
  const EngineOptions& eo = *s_.eo;
  const ModelConfig& m = *s_.model;
  char b[640];
  std::snprintf(b, sizeof b,
                "zerotrain: %s on %d rank(s), backend %s, stage %d, %s | model %s: %d layers, dim %d, vocab %d, seq %d, "
                "%" PRId64 " params | micro batch %d x accum %d x world %d = %lld samples/step | data: %s\n",
                s_.config_name.c_str(), world_, backend_.name().c_str(), eo.zero.stage, dtype_name(eo.zero.precision),
                m.name.c_str(), m.layers, m.dim, m.vocab, m.seq_len, engine_.params(), eo.micro_batch, eo.grad_accum,
                world_, (long long)samples_per_step_, s_.data_description.c_str());
  std::string out = b;
  out += "  run: " + (s_.run_length.empty() ? describe_run_length(*s_.cfg) : s_.run_length) + "\n";
  std::vector<std::string> where;
  if (!s_.metrics_path.empty()) where.push_back("metrics -> " + s_.metrics_path);
  if (!s_.trace_path.empty()) where.push_back("trace -> " + s_.trace_path);
  for (const auto& d : inst_.monitors.describe()) where.push_back(d);
  if (comms_.enabled()) where.push_back(std::string("comms_logger: rank 0's collectives") +
                                        (comms_.verbose() ? ", every step and" : ",") + " a summary at the end");
  if (inst_.profiler)
    where.push_back("flops profiler: step " + std::to_string(inst_.profiler->step_to_profile()) + " -> " +
                    (inst_.profiler->output_file().empty() ? "stdout" : inst_.profiler->output_file()));
  where.push_back("checkpoints: " + s_.checkpoints);
  out += "  outputs:";
  for (size_t i = 0; i < where.size(); ++i) out += (i ? " | " : " ") + where[i];
  return out + "\n";
}

nlohmann::json RunReporter::units_json() const {
  nlohmann::json units = nlohmann::json::array();
  const ShardMap& map = engine_.shard_map();
  for (int u = 0; u < s_.model->units(); ++u)
    units.push_back({{"numel", map.shard(u).numel}, {"padded", map.shard(u).padded},
                     {"tensors", map.unit(u).tensors.size()}});
  return units;
}

void RunReporter::start() {
  const nlohmann::json process = process_.sample(engine_.ledger());
  if (s_.say) {
    std::fputs(header().c_str(), s_.say);
    std::fprintf(s_.say, "memory plan (per rank):\n%s", plan_to_table(*s_.plan).c_str());
    const auto& a = engine_.ledger().current();
    std::fprintf(s_.say, "allocated (rank 0): params %s, grads %s, master %s, optimizer %s, activations %s, buffers %s\n",
                 gib(a[MemCategory::Params]).c_str(), gib(a[MemCategory::Grads]).c_str(),
                 gib(a[MemCategory::Master]).c_str(), gib(a[MemCategory::Optimizer]).c_str(),
                 gib(a[MemCategory::Activations]).c_str(), gib(a[MemCategory::CommBuffers]).c_str());
    const auto& h = engine_.ledger().host();
    if (h.total() > 0)
      std::fprintf(s_.say, "host (rank 0, offload and checkpoint): params %s, master %s, optimizer %s, buffers %s, "
                           "checkpoint snapshot %s\n",
                   gib(h[MemCategory::Params]).c_str(), gib(h[MemCategory::Master]).c_str(),
                   gib(h[MemCategory::Optimizer]).c_str(), gib(h[MemCategory::CommBuffers]).c_str(),
                   gib(h[MemCategory::Checkpoint]).c_str());
    if (s_.process_baseline > 0)
      std::fprintf(s_.say, "process (rank 0): %s resident at start-up (binary, libraries, MPI, threads), %s with the "
                           "allocations above\n",
                   gib(s_.process_baseline).c_str(), gib(process["rss"][0].get<uint64_t>()).c_str());
  }
  nlohmann::json start = {{"event", "start"},
          {"world_size", world_},
          {"stage", s_.eo->zero.stage},
          {"params", engine_.params()},
          {"precision", dtype_name(s_.eo->zero.precision)},
          {"samples_per_step", samples_per_step_},
          {"tokens_per_step", tokens_per_step_},
          {"expected_comm_bytes_per_step", engine_.expected_comm_bytes_per_step()},
          {"ranks_per_node", engine_.topology().ranks_per_node},
          {"nodes", engine_.topology().nodes()},
          {"hpz_partition_size", engine_.options().gather.hpz_partition_size},
          {"mics_shard_size", stage_traits(engine_.options().zero.stage).gathers_params() ? engine_.options().zero.mics_shard_size : 0},
          {"quantized_weights", engine_.options().gather.quantized_weights},
          {"quantized_gradients", engine_.quantizes_gradients()},
          {"quantized_gradient_block", engine_.quantized_gradient_block()},
          {"mics_hierarchical_params_gather", engine_.options().gather.mics_hierarchical},
          {"expected_comm_bytes_intra_per_step", engine_.expected_link_bytes_per_step().intra},
          {"expected_comm_bytes_inter_per_step", engine_.expected_link_bytes_per_step().inter},
          {"units", units_json()},
          {"plan", plan_to_json(*s_.plan)},
          {"allocated", mem_counts_json(engine_.ledger().current())},
          {"allocated_host", mem_counts_json(engine_.ledger().host())},
          {"process", process}};
  if (is_compressed(s_.eo->optimizer.type)) {  // the compressed (and local) steps' links, beside the exact ones'
    const OptimizerOptions& o = s_.eo->optimizer;
    const LinkBytes c = engine_.expected_link_bytes_per_step(StepComm::Compressed);
    if (o.type == OptimizerType::OneBitAdam) start["onebit_freeze_step"] = o.freeze_step;
    if (o.type == OptimizerType::OneBitLamb) start["onebit_lamb_freeze_step"] = o.freeze_step;
    if (o.type == OptimizerType::ZeroOneAdam) {
      const LinkBytes l = engine_.expected_link_bytes_per_step(StepComm::Local);
      start["zero_one_var_freeze_step"] = o.var_freeze_step;
      start["expected_comm_bytes_intra_per_step_local"] = l.intra;
      start["expected_comm_bytes_inter_per_step_local"] = l.inter;
    }
    start["expected_comm_bytes_intra_per_step_compressed"] = c.intra;
    start["expected_comm_bytes_inter_per_step_compressed"] = c.inter;
  }
  record(start);
}

// 0/1 Adam's two switches, once each: the first step whose gradients cross compressed (between
// variance updates), and the first step of the frozen phase (DeepSpeed's numbering: the engine's
// applied count after the step).
void RunReporter::say_zero_one_phase(const StepStats& st) {
  const OptimizerOptions& o = s_.eo->optimizer;
  const int64_t s = engine_.applied_steps();
  if (!compressed_said_ && st.optimizer_comm == StepComm::Compressed && !(s >= 3 && s - 1 > o.var_freeze_step)) {
    std::fprintf(s_.say, "0/1 Adam: from step %lld the gradients of the steps between variance updates %s (the variance "
                         "is updated every var_interval steps, from 1, doubling after every %lld updates)\n",
                 (long long)st.step, world_ > 1 ? "cross the ranks as 1 bit per element" : "update nothing (one rank)",
                 (long long)o.var_update_scaler);
    compressed_said_ = true;
  }
  if (!frozen_said_ && s >= 3 && s - 1 > o.var_freeze_step) {
    std::fprintf(s_.say, "0/1 Adam: from step %lld the variance is frozen (var_freeze_step %lld): each rank takes local "
                         "steps and the ranks sync every local_step_interval steps (from 1, doubling every %lld steps up "
                         "to %lld)%s\n",
                 (long long)st.step, (long long)o.var_freeze_step, (long long)o.local_step_scaler,
                 (long long)o.local_step_clipper, world_ > 1 ? ", the update crossing as 1 bit per element" : "");
    frozen_said_ = true;
  }
}

void RunReporter::before_step(int64_t step) {
  if (step == 1) comms_.begin(comm_.stats());
  step_before_ = comm_.stats();
  if (engine_.trace()) trace_before_ = engine_.trace()->size();
  if (inst_.profiler) backend_.attach_op_recorder(inst_.profiler->before_step(step));
}

std::string RunReporter::progress(const StepStats& st, double rate) const {
  // ETA from the mean of the last (up to) ten steps, leaving out the first (warm-up) when possible.
  const size_t n = step_seconds_.size();
  const size_t from = n > 1 ? std::max<size_t>(1, n > 10 ? n - 10 : 1) : 0;
  double sum = 0;
  for (size_t i = from; i < n; ++i) sum += step_seconds_[i];
  const double mean = n > from ? sum / double(n - from) : st.seconds;
  const double eta = mean * double(s_.steps - st.step);
  char b[384];
  std::snprintf(b, sizeof b, "step %6lld/%lld | loss %.4f | lr %.3e | grad norm %.3f%s | %.0f tokens/s | peak %s | ETA %s",
                (long long)st.step, (long long)s_.steps, st.loss, st.lr, st.grad_norm, st.skipped ? " (skipped)" : "",
                rate, gib(st.mem_peak).c_str(), duration(eta).c_str());
  std::string s = b;
  if (s_.eo->zero.precision == DType::F16)
    s += " | loss scale " + std::to_string(int64_t(st.loss_scale)) + ", skipped " + std::to_string(st.skipped_total);
  return s + "\n";
}

std::vector<MonitorEvent> RunReporter::events(const StepStats& st, double rate) const {
  const int64_t x = st.step * samples_per_step_;
  std::vector<MonitorEvent> e = {
      {"Train/Samples/train_loss", st.loss, x},
      {"Train/Samples/lr", st.lr, x},
      {"Train/Samples/grad_norm", st.grad_norm, x},
      {"Train/Samples/tokens_per_s", rate, x},
      {"Train/Samples/step_time_ms", 1e3 * st.seconds, x},
      {"Train/Samples/peak_memory_MiB", double(st.mem_peak) / double(1 << 20), x},
      {"Train/Samples/comm_bytes_all_reduce", double(st.comm_bytes[int(CommOp::AllReduce)]), x},
      {"Train/Samples/comm_bytes_reduce_scatter", double(st.comm_bytes[int(CommOp::ReduceScatter)]), x},
      {"Train/Samples/comm_bytes_all_gather", double(st.comm_bytes[int(CommOp::AllGather)]), x},
      {"Train/Samples/comm_bytes_intra", double(st.comm_links.intra), x},
      {"Train/Samples/comm_bytes_inter", double(st.comm_links.inter), x},
  };
  if (s_.eo->zero.precision == DType::F16) e.push_back({"Train/Samples/loss_scale", st.loss_scale, x});
  if (s_.cfg->wall_clock_breakdown.value) {
    e.push_back({"Train/Samples/elapsed_time_ms_forward", 1e3 * st.forward_s, x});
    e.push_back({"Train/Samples/elapsed_time_ms_backward", 1e3 * st.backward_s, x});
    e.push_back({"Train/Samples/elapsed_time_ms_step", 1e3 * st.optimizer_s, x});
  }
  return e;
}

double RunReporter::after_step(const StepStats& st) {
  const CommStats now = comm_.stats();
  const double rate = tokens_per_step_ / st.seconds;
  step_seconds_.push_back(st.seconds);
  const double busy = busy_seconds(now) - busy_seconds(step_before_);
  if (st.step > 1 && engine_.trace()) {
    comm_busy_s_ += busy;
    trace_steps_.push_back({trace_before_, engine_.trace()->size()});
  }
  const int64_t every = std::max<int64_t>(1, s_.cfg->steps_per_print.value.value_or(INT64_MAX));  // null: first and last
  if (s_.say && (st.step == 1 || st.step % every == 0 || st.step == s_.steps)) {
    std::fputs(progress(st, rate).c_str(), s_.say);
    if (s_.cfg->wall_clock_breakdown.value)
      std::fprintf(s_.say, "        time | step %.1f ms: forward %.1f, backward %.1f, reduce wait %.1f, gather wait %.1f, "
                           "optimizer %.1f\n",
                   1e3 * st.seconds, 1e3 * st.forward_s, 1e3 * st.backward_s, 1e3 * st.reduce_wait_s,
                   1e3 * st.gather_wait_s, 1e3 * st.optimizer_s);
    if (s_.cfg->memory_breakdown.value)
      std::fprintf(s_.say, "      memory | %s\n", mem_counts_json(engine_.ledger().peak_by_category()).dump().c_str());
  }
  const OptimizerType type = s_.eo->optimizer.type;
  if (s_.say && (type == OptimizerType::OneBitAdam || type == OptimizerType::OneBitLamb) && !st.exact_gradients &&
      !compressed_said_) {
    const char* name = type == OptimizerType::OneBitAdam ? "1-bit Adam" : "1-bit LAMB";
    if (world_ > 1)
      std::fprintf(s_.say, "%s: from step %lld each rank keeps its own gradients and the momentum crosses the ranks "
                           "as 1 bit per element%s (freeze_step %lld; the first update was DeepSpeed's dry run)\n",
                   name, (long long)st.step, type == OptimizerType::OneBitLamb ? " in one call for the whole model" : "",
                   (long long)s_.eo->optimizer.freeze_step);
    else
      std::fprintf(s_.say, "%s: from step %lld the variance is frozen (freeze_step %lld); with one rank nothing is "
                           "compressed\n",
                   name, (long long)st.step, (long long)s_.eo->optimizer.freeze_step);
    compressed_said_ = true;
  }
  if (s_.say && s_.eo->optimizer.type == OptimizerType::ZeroOneAdam) say_zero_one_phase(st);
  if (s_.say && comms_.verbose()) std::fputs(comms_.step_lines(st.step, step_before_, now).c_str(), s_.say);
  nlohmann::json process;
  if (!first_step_done_) process = process_.sample(engine_.ledger());  // collective: before anything rank 0 alone may fail
  first_step_done_ = true;
  nlohmann::json step_record = {{"event", "step"},
          {"step", st.step},
          {"samples", st.step * samples_per_step_},
          {"loss", st.loss},
          {"lr", st.lr},
          {"grad_norm", st.grad_norm},
          {"loss_scale", st.loss_scale},
          {"skipped", st.skipped},
          {"step_ms", 1e3 * st.seconds},
          {"tokens_per_s", rate},
          {"comm_bytes", comm_json(st.comm_bytes)},
          {"comm_calls", comm_json(st.comm_calls)},
          {"comm_bytes_intra", st.comm_links.intra},
          {"comm_bytes_inter", st.comm_links.inter},
          {"comm_bytes_secondary", comm_json(st.groups.by_role[int(CommRole::Secondary)].bytes)},
          {"comm_calls_secondary", comm_json(st.groups.by_role[int(CommRole::Secondary)].calls)},
          {"comm_groups", groups_json(st.groups)},
          {"comm_busy_s", busy},
          {"mem_peak", st.mem_peak}};
  if (is_compressed(s_.eo->optimizer.type)) {
    step_record["gradients_all_reduced"] = st.exact_gradients;
    step_record["optimizer_comm"] = st.optimizer_comm == StepComm::Exact        ? "exact"
                                    : st.optimizer_comm == StepComm::Compressed ? "compressed"
                                                                                : "local";
  }
  if (!process.is_null()) step_record["process"] = process;
  quant_weights_.add(st.quant_weights);
  quant_grads_.add(st.quant_grads);
  if (const QuantError& q = st.quant_weights; q.calls)  // qwZ: rank 0's sampled blocks, beside the bound
    step_record["quant_weights"] = {{"max_rel_err", q.max_rel}, {"rms_rel_err", q.rms_rel()},
                                    {"bound_rel_err", QuantizedGather::kBoundRel}, {"sampled_elements", q.elements},
                                    {"gathers", q.calls}, {"blocks", q.blocks}, {"bad_blocks", q.bad_blocks},
                                    {"level_bytes", q.level_bytes}, {"scale_bytes", q.scale_bytes},
                                    {"quantize_ms", 1e3 * q.quantize_s}, {"dequantize_ms", 1e3 * q.dequantize_s}};
  if (const QuantError& q = st.quant_grads; q.calls)  // qgZ: rank 0's sampled blocks of both hops, beside one rounding's bound
    step_record["quant_grads"] = {{"max_rel_err", q.max_rel}, {"rms_rel_err", q.rms_rel()},
                                  {"bound_rel_err", QuantizedReduce::kBoundRel}, {"sampled_elements", q.elements},
                                  {"reductions", q.calls}, {"blocks", q.blocks}, {"bad_blocks", q.bad_blocks},
                                  {"exact_elements", q.exact_elements},
                                  {"level_bytes", q.level_bytes}, {"scale_bytes", q.scale_bytes},
                                  {"quantize_ms", 1e3 * q.quantize_s}, {"dequantize_ms", 1e3 * q.dequantize_s}};
  record(step_record);
  inst_.monitors.write(events(st, rate));
  if (inst_.profiler) backend_.attach_op_recorder(nullptr);
  if (inst_.profiler)
    if (auto p = inst_.profiler->after_step(st.step, st.seconds)) {
      const std::string text = inst_.profiler->render(*p);
      const std::string& file = inst_.profiler->output_file();
      if (file.empty()) {
        if (s_.say) std::fputs(text.c_str(), s_.say);
      } else {
        std::FILE* f = std::fopen(file.c_str(), "w");
        if (!f || std::fputs(text.c_str(), f) < 0 || std::fclose(f) != 0)
          throw std::runtime_error("writing the flops profile " + file + " failed: " + std::strerror(errno));
        if (s_.say) std::fprintf(s_.say, "flops profile of step %lld written to %s\n", (long long)st.step, file.c_str());
      }
      nlohmann::json j = inst_.profiler->to_json(*p);
      j["event"] = "flops_profile";
      record(j);
    }
  return rate;
}

void RunReporter::validation(int64_t step, double val_loss) {
  if (s_.say) std::fprintf(s_.say, "eval  step %6lld | val loss %.4f\n", (long long)step, val_loss);
  inst_.monitors.write({{"Eval/Samples/val_loss", val_loss, step * samples_per_step_}});
}

void RunReporter::training_done() {
  final_stats_ = comm_.stats();
  resident_ = mem_counts_json(engine_.ledger().current());
  peak_by_category_ = mem_counts_json(engine_.ledger().peak_by_category());
}

void RunReporter::finish(int64_t steps, double final_val_loss, double unigram_entropy, double median_tokens_per_s,
                         const ParamSummary& summary) {
  nlohmann::json end = {{"event", "end"},
                        {"steps", steps},
                        {"param_checksum", hex64(summary.checksum)},
                        {"param_l2", summary.l2},
                        {"val_loss", final_val_loss},
                        {"tokens_per_s_median", median_tokens_per_s},
                        {"resident", resident_},
                        {"peak_by_category", peak_by_category_},
                        {"mem_peak", engine_.ledger().peak_total()},
                        {"process", process_.sample(engine_.ledger())}};
  write_trace();
  if (const Trace* t = engine_.trace()) {
    if (!trace_steps_.empty() && world_ > 1) {
      const OverlapShare o = overlap_share(*t, trace_steps_, comm_busy_s_);
      end["comm_busy_s"] = o.comm_s;
      end["comm_exposed_s"] = o.exposed_s;
      end["comm_hidden_share"] = o.hidden();
      if (s_.say)
        std::fprintf(s_.say,
                     "communication (rank 0, steps 2..%lld): %.1f ms busy, %.1f ms waited for by compute: %.0f%% hidden "
                     "behind compute\n",
                     (long long)steps, 1e3 * o.comm_s, 1e3 * o.exposed_s, 100.0 * o.hidden());
    }
  }
  if (comms_.enabled()) {
    const CommStats& now = final_stats_;
    if (s_.say) std::fprintf(s_.say, "comms_logger summary (rank 0):\n%s", comms_.summary(now).c_str());
    end["comms"] = comms_.summary_json(now);
    // The quantized collectives' bytes split into levels and scales (they travel in one call, so the
    // table above counts them together; qgZ's all-to-alls run on the node and cross groups).
    for (const auto& [name, op, q] : {std::tuple{"qwZ", "all_gather", &quant_weights_}, std::tuple{"qgZ", "all_to_all", &quant_grads_}}) {
      if (!q->calls) continue;
      if (s_.say)
        std::fprintf(s_.say, "  %s %s: %s of levels, %s of scales in %llu calls\n", name, op,
                     human_bytes(q->level_bytes).c_str(), human_bytes(q->scale_bytes).c_str(), (unsigned long long)q->calls);
      end["comms_quantized"][name] = {{"op", op}, {"level_bytes", q->level_bytes}, {"scale_bytes", q->scale_bytes},
                                      {"calls", q->calls}};
    }
  }
  if (inst_.profiler && inst_.profiler->peak().flops_per_s > 0 && median_tokens_per_s > 0) {
    const double step_s = tokens_per_step_ / median_tokens_per_s;
    const double mfu = inst_.profiler->model_flops_per_step() / step_s / inst_.profiler->peak().flops_per_s;
    end["mfu_median_step"] = mfu;
    if (s_.say)
      std::fprintf(s_.say, "MFU at the median step: %.2f%% of %.1f GFLOP/s (%s)\n", 100.0 * mfu,
                   inst_.profiler->peak().flops_per_s / 1e9, inst_.profiler->peak().source.c_str());
  }
  const std::optional<int64_t> schedule = s_.cfg->schedule_steps();
  if (s_.say && schedule && *schedule > steps)
    std::fprintf(s_.say, "schedule: step %lld of %lld; save with --save DIR and resume with --load DIR to continue it\n",
                 (long long)steps, (long long)*schedule);
  if (s_.say)
    std::fprintf(s_.say, "done: %lld steps, final val loss %.4f (unigram entropy %.3f), median %.0f tokens/s, "
                         "param checksum %s, param L2 %.6f\n",
                 (long long)steps, final_val_loss, unigram_entropy, median_tokens_per_s, hex64(summary.checksum).c_str(),
                 summary.l2);
  record(end);
  if (s_.metrics && !metrics_failed_) s_.metrics->close();
}

}  // namespace zt
