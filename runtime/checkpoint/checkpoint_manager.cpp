// CheckpointManager: settings checks, load or init at start, periodic background saves, final save.
#include "runtime/checkpoint/checkpoint_manager.h"

#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstring>

#include "runtime/checkpoint/file_io.h"
#include "runtime/checkpoint/hf_gpt2.h"
#include "runtime/checkpoint/hf_llama.h"

namespace zt::ckpt {

Diagnostics compare_run(const Manifest& m, const RunFacts& now, const std::string& precision_now) {
  Diagnostics w;
  const std::string where = m.tag + "/" + kManifestName;
  const std::string fix = "resume with the saved run's values (the data order is a function of the seed, the step and the "
                          "global batch), or start a new run from its weights alone: --init-from DIR instead of --load";
  if (m.run.seed != now.seed)
    w.error(where + ": run.seed", std::to_string(m.run.seed),
            "the checkpoint was saved by a run with seed " + std::to_string(m.run.seed) + ", this run's seed is " +
                std::to_string(now.seed) + ": the samples would not continue the saved run's order",
            fix + " (--seed " + std::to_string(m.run.seed) + ")");
  if (m.run.global_batch != now.global_batch && m.run.global_batch > 0)
    w.error(where + ": run.global_batch", std::to_string(m.run.global_batch),
            "the checkpoint was saved by a run with global batch " + std::to_string(m.run.global_batch) +
                ", this run's global batch is " + std::to_string(now.global_batch) +
                " (micro batch x accumulation x world size): the samples would not continue the saved run's order",
            fix + " (keep micro batch x accumulation x world size at " + std::to_string(m.run.global_batch) + ")");
  if (!m.precision.empty() && m.precision != precision_now)
    w.warning(where + ": precision", m.precision,
              "loading into a " + precision_now + " run: the fp32 master and moments load as they are, the working copy is "
              "rounded anew");
  return w;
}

void check_settings(const CheckpointSettings& s, Diagnostics& d) {
  if (s.save_every < 0) d.error("--save-every", std::to_string(s.save_every), "must be >= 0 (0: save at the end only)");
  if (s.save_every > 0 && s.save_dir.empty()) d.error("--save-every", std::to_string(s.save_every), "needs --save DIR");
  if (!s.load_dir.empty() && !s.init_from.empty())
    d.error("--init-from", s.init_from, "cannot be combined with --load (a checkpoint already holds weights)",
            "drop one of them");
  if (!s.load_tag.empty() && s.load_dir.empty()) d.error("--load-tag", s.load_tag, "needs --load DIR");
  if (s.writer_nice < 0 || s.writer_nice > 19)
    d.error("--save-writer-nice", std::to_string(s.writer_nice), "must be 0..19",
            "give 19 (the default: the step's threads come first), 0 (the run's own priority) or a level between");
  if (!(s.writer_cpu_percent > 0 && s.writer_cpu_percent <= 100)) {
    char v[32];
    std::snprintf(v, sizeof v, "%g", s.writer_cpu_percent);
    d.error("--save-writer-cpu-percent", v, "must be above 0 and at most 100 (percent of one core)",
            "give e.g. 25 to hold the checkpoint writer to a quarter of a core, or 100 (the default) for no pacing");
  }
}

namespace {

// --save DIR: a folder this user can write, or one it can create (checked without creating it, so
// that a run refused later leaves nothing behind).
void check_save_dir(const std::string& dir, Diagnostics& d) {
  if (path_exists(dir) && !is_directory(dir)) {
    d.error("--save", dir, "exists and is not a directory", "give a folder (it holds `latest` and one folder per tag)");
    return;
  }
  std::string p = dir;
  while (!path_exists(p)) {
    const size_t slash = p.find_last_of('/');
    p = slash == std::string::npos ? "." : slash == 0 ? "/" : p.substr(0, slash);
  }
  if (!is_directory(p)) {
    d.error("--save", dir, p + " is not a directory", "give a folder under a directory");
  } else if (::access(p.c_str(), W_OK | X_OK) != 0) {
    d.error("--save", dir,
            std::string(p == dir ? "" : "cannot be created: ") + p + " is not writable by this user: " + std::strerror(errno),
            "give a folder this user can write");
  }
}

}  // namespace

namespace {

// --load DIR, or --init-from DIR (a zerotrain checkpoint: its fp32 master alone, counters untouched).
LoadOptions load_options(const CheckpointSettings& s) {
  LoadOptions lo;
  lo.io.aio = s.aio;
  lo.io.direct_reads = s.direct_reads;
  if (is_weights_only(s)) {
    lo.path = s.init_from;
    lo.load_optimizer_states = false;
    lo.load_counters = false;
    return lo;
  }
  lo.path = s.load_dir;
  lo.tag = s.load_tag;
  lo.load_optimizer_states = s.load_optimizer_states;
  return lo;
}

}  // namespace

// How a load read, and where its seconds went: the wait for reads (after checking what had
// arrived), the block checks, the copy out of alignment scratch, the rebuild of the working copy.
// The note on how the bytes came is only said when some came O_DIRECT (--load-direct): how many,
// and how many of all went through scratch rather than landing in place.
static std::string read_path(const LoadResult& r) {
  auto mib = [](int64_t b) { return std::to_string(int64_t(double(b) / double(1 << 20) + 0.5)); };
  const std::string how =
      r.io.direct_bytes == 0 ? "" : mib(r.io.direct_bytes) + " MiB of it O_DIRECT, " + mib(r.io.copied_bytes) + " MiB through scratch; ";
  char t[256];
  std::snprintf(t, sizeof t, " (%s%.2f s waiting for reads, %.2f s checking blocks, %.2f s copying out of scratch, %.2f s commit)",
                how.c_str(), r.io.read_s, r.io.hash_s, r.io.copy_s, r.commit_s);
  return t;
}

// A folder of Hugging Face weights (model.safetensors or its index inside) is not a checkpoint.
bool is_weights_only(const CheckpointSettings& s) {
  return !s.init_from.empty() && is_directory(s.init_from) && hf_weights_dir(s.init_from).empty();
}

void check_before_start(const CheckpointSettings& s, const RunFacts& facts, const std::string& precision,
                        OptimizerType optimizer, bool sgd_momentum, int64_t steps, const std::vector<ElementRange>& needed,
                        Diagnostics& d) {
  const size_t before = d.error_count();
  check_settings(s, d);
  if (d.error_count() != before) return;
  if (!s.save_dir.empty()) check_save_dir(s.save_dir, d);
  const std::vector<UnitLayout> units = build_unit_layouts(facts.model);
  const bool weights_only = is_weights_only(s);
  if (!s.init_from.empty() && !weights_only) {
    if (facts.model.llama()) HfLlamaReader::open(s.init_from, units, facts.model, d);
    else HfGpt2Reader::open(hf_gpt2_weights_file(s.init_from), units, facts.model, d);
    return;
  }
  if (s.load_dir.empty() && !weights_only) return;
  const LoadOptions lo = load_options(s);
  LoadPlan plan;
  try {
    if (!prepare_manifest(units, state_arrays_for(optimizer, sgd_momentum), optimizer, lo, plan, d)) return;
  } catch (const IoError& e) {
    d.error(e.path(), "", e.what(), "check that the checkpoint is readable by this user");
    return;
  }
  const Manifest& m = plan.manifest;
  for (const RankFileRecord& r : m.ranks)
    if (!path_exists(join_path(plan.tag_dir, r.file)))
      d.error(join_path(plan.tag_dir, r.file), "", "rank " + std::to_string(r.rank) + "'s file is missing",
              "copy every rank file of the tag together (the manifest lists " + std::to_string(m.ranks.size()) +
                  "), or load another tag");
  if (!weights_only) {
    // Weights only: the new run's config, seed and batch are its own, and it starts at step 0.
    Diagnostics w = compare_run(m, facts, precision);
    w.append(plan.warnings);
    for (const auto& x : w.all())
      if (x.severity == Severity::Error) d.add(x);
    if (m.step() > steps)
      d.error("--steps", std::to_string(steps),
              "the checkpoint " + plan.tag_dir + " is at step " + std::to_string(m.step()) + " already",
              "pass --steps " + std::to_string(m.step()) + " or more (the total, loaded steps included)");
  }
  if (d.error_count() != before) return;
  // The bytes this rank will load, read and checked now: a damaged file stops the run here, before
  // the engine allocates, instead of after.
  try {
    verify_needed(plan, needed, weights_only ? "start from an earlier tag with --init-from DIR/TAG" : "load an earlier tag with --load-tag",
                  d);
  } catch (const IoError& e) {
    d.error(e.path(), "", e.what(), "check that the checkpoint is readable by this user");
  }
}

CheckpointManager::CheckpointManager(ShardedState& state, Communicator& comm, Backend* staging, RunFacts facts,
                                     CheckpointSettings s, std::FILE* say)
    : state_(state), ex_(comm, staging), facts_(std::move(facts)), s_(std::move(s)), say_(say) {
  Diagnostics d;
  check_settings(s_, d);
  if (d.has_errors()) throw UserError(d);
  if (!s_.save_dir.empty()) {
    SaveOptions so;
    so.dir = s_.save_dir;
    so.tag_validation = s_.tag_validation;
    so.node_local_storage = s_.use_node_local_storage;
    so.io.aio = s_.aio;
    so.writer_nice = s_.writer_nice;
    so.writer_cpu_share = s_.writer_cpu_percent / 100.0;
    if (say_) so.warn = [out = say_](const std::string& m) { std::fprintf(out, "warning: %s\n", m.c_str()); };
    else so.warn = [](const std::string&) {};
    writer_ = std::make_unique<CheckpointWriter>(ex_, so);
    snapshot_bytes_ = writer_->reserve(state_);
  }
}

CheckpointManager::~CheckpointManager() = default;

int64_t CheckpointManager::start() {
  if (s_.load_universal && say_)
    std::fprintf(say_, "note: checkpoint.load_universal: every zerotrain checkpoint loads at any world size and stage; "
                       "the key changes nothing%s\n",
                 s_.load_dir.empty() ? " (and no --load was given)" : "");
  if (is_weights_only(s_)) {
    const LoadResult r = load_checkpoint(state_, ex_, load_options(s_));
    const Manifest& m = r.manifest;
    if (facts_.hf_vocab == 0) facts_.hf_vocab = m.run.hf_vocab;
    if (say_)
      std::fprintf(say_,
                   "initialised the weights from checkpoint %s: the fp32 master of step %" PRId64
                   ", saved at world size %d stage %d, now %d / %d (optimizer state fresh, step 0); this rank read "
                   "%.1f MiB from %zu rank file(s) in %.2f s%s\n",
                   r.tag_dir.c_str(), m.step(), m.world_size, m.stage, state_.world_size(), state_.stage(),
                   double(r.bytes_read) / double(1 << 20), r.files_read.size(), r.seconds, read_path(r).c_str());
    return 0;
  }
  if (!s_.init_from.empty()) {
    if (facts_.model.llama()) facts_.hf_vocab = init_from_hf_llama(state_, ex_, s_.init_from, facts_.model);
    else facts_.hf_vocab = init_from_hf(state_, ex_, hf_gpt2_weights_file(s_.init_from), facts_.model);
    if (say_) std::fprintf(say_, "initialised the weights from %s (optimizer state fresh)\n", s_.init_from.c_str());
    if (say_ && facts_.hf_vocab > 0 && facts_.hf_vocab < facts_.model.vocab)
      std::fprintf(say_,
                   "note: --init-from: the file's vocabulary has %" PRId64 " rows, the model's %d: rows %" PRId64
                   "..%d of wte%s start at zero; checkpoints record %" PRId64 " and export --format hf writes those rows only\n",
                   facts_.hf_vocab, facts_.model.vocab, facts_.hf_vocab, facts_.model.vocab - 1,
                   facts_.model.tied_embeddings ? "" : " and lm_head", facts_.hf_vocab);
    return 0;
  }
  if (s_.load_dir.empty()) return 0;
  loaded_ = load_checkpoint(state_, ex_, load_options(s_));
  const Manifest& m = loaded_->manifest;
  if (facts_.hf_vocab == 0) facts_.hf_vocab = m.run.hf_vocab;
  Diagnostics w = compare_run(m, facts_, dtype_name(state_.precision()));
  if (w.has_errors()) throw UserError(w);  // a run checks these before it allocates (check_before_start)
  w.append(loaded_->warnings);
  if (say_) {
    for (const auto& x : w.all()) std::fprintf(say_, "%s\n", format_diagnostic(x).c_str());
    std::fprintf(say_,
                 "loaded checkpoint %s: step %" PRId64 ", saved at world size %d stage %d, now %d / %d; this rank read "
                 "%.1f MiB from %zu rank file(s) in %.2f s%s\n",
                 loaded_->tag_dir.c_str(), m.step(), m.world_size, m.stage, state_.world_size(), state_.stage(),
                 double(loaded_->bytes_read) / double(1 << 20), loaded_->files_read.size(), loaded_->seconds,
                 read_path(*loaded_).c_str());
  }
  last_saved_ = m.step();  // an end-of-run save at this step would rewrite the same state
  return m.step();
}

void CheckpointManager::report(std::deque<SaveResult> done, bool final_save) {
  for (auto& r : done) {
    if (say_) std::fprintf(say_, "%s%s\n", r.ok ? "" : "warning: ", r.message.c_str());
    if (!r.ok && final_save) throw UserError("--save", s_.save_dir, r.message, "free space or fix the folder, then resume from `latest`");
    saves_.push_back(std::move(r));
  }
}

void CheckpointManager::after_step(int64_t step) {
  if (!writer_) return;
  if (writer_->pending()) writer_->poll();
  if (s_.save_every > 0 && step % s_.save_every == 0) {
    writer_->begin(state_, facts_, default_tag(step));
    if (!s_.background) writer_->finish();
    last_saved_ = step;
  }
  report(writer_->take_results(), false);
}

void CheckpointManager::at_end(int64_t step) {
  if (!writer_) return;
  if (last_saved_ != step) {
    writer_->begin(state_, facts_, default_tag(step));
    last_saved_ = step;
  }
  writer_->finish();
  // The last save decides whether the run ends saved; earlier failures were warnings.
  auto done = writer_->take_results();
  const bool last_failed = !done.empty() && !done.back().ok;
  if (last_failed) {
    SaveResult last = done.back();
    done.pop_back();
    report(std::move(done), false);
    report({last}, true);
  }
  report(std::move(done), false);
}

}  // namespace zt::ckpt
