// CheckpointManager: settings checks, load or init at start, periodic background saves, final save.
#include "runtime/checkpoint/checkpoint_manager.h"

#include <cinttypes>

#include "runtime/checkpoint/file_io.h"
#include "runtime/checkpoint/hf_gpt2.h"

namespace zt::ckpt {

Diagnostics compare_run(const Manifest& m, const RunFacts& now, const std::string& precision_now) {
  Diagnostics w;
  const std::string where = m.tag + "/" + kManifestName;
  if (m.run.seed != now.seed)
    w.warning(where + ": run.seed", std::to_string(m.run.seed),
              "this run's seed is " + std::to_string(now.seed) + ": the sample order differs from the saved run's");
  if (m.run.global_batch != now.global_batch && m.run.global_batch > 0)
    w.warning(where + ": run.global_batch", std::to_string(m.run.global_batch),
              "this run's global batch is " + std::to_string(now.global_batch) +
                  ": the data continues in another order than the saved run would have (keep micro batch x accumulation x "
                  "world size equal to resume exactly)");
  if (!m.precision.empty() && m.precision != precision_now)
    w.warning(where + ": precision", m.precision,
              "loading into a " + precision_now + " run: the fp32 master and moments load as they are, the working copy is "
              "rounded anew");
  return w;
}

CheckpointManager::CheckpointManager(ShardedState& state, Communicator& comm, Backend* staging, RunFacts facts,
                                     CheckpointSettings s, std::FILE* say)
    : state_(state), ex_(comm, staging), facts_(std::move(facts)), s_(std::move(s)), say_(say) {
  Diagnostics d;
  if (s_.save_every < 0) d.error("--save-every", std::to_string(s_.save_every), "must be >= 0 (0: save at the end only)");
  if (s_.save_every > 0 && s_.save_dir.empty()) d.error("--save-every", std::to_string(s_.save_every), "needs --save DIR");
  if (!s_.load_dir.empty() && !s_.init_from.empty())
    d.error("--init-from", s_.init_from, "cannot be combined with --load (a checkpoint already holds weights)",
            "drop one of them");
  if (!s_.load_tag.empty() && s_.load_dir.empty()) d.error("--load-tag", s_.load_tag, "needs --load DIR");
  if (d.has_errors()) throw UserError(d);
  if (s_.load_universal && say_)
    std::fprintf(say_, "note: checkpoint.load_universal: every zerotrain checkpoint loads at any world size and stage; "
                       "the key changes nothing%s\n",
                 s_.load_dir.empty() ? " (and no --load was given)" : "");
  if (!s_.save_dir.empty()) {
    SaveOptions so;
    so.dir = s_.save_dir;
    so.tag_validation = s_.tag_validation;
    so.node_local_storage = s_.use_node_local_storage;
    if (say_) so.warn = [out = say_](const std::string& m) { std::fprintf(out, "warning: %s\n", m.c_str()); };
    else so.warn = [](const std::string&) {};
    writer_ = std::make_unique<CheckpointWriter>(ex_, so);
  }
}

CheckpointManager::~CheckpointManager() = default;

int64_t CheckpointManager::start() {
  if (!s_.init_from.empty()) {
    init_from_hf(state_, ex_, s_.init_from, facts_.model);
    if (say_) std::fprintf(say_, "initialised the weights from %s (optimizer state fresh)\n", s_.init_from.c_str());
    return 0;
  }
  if (s_.load_dir.empty()) return 0;
  LoadOptions lo;
  lo.path = s_.load_dir;
  lo.tag = s_.load_tag;
  lo.load_optimizer_states = s_.load_optimizer_states;
  loaded_ = load_checkpoint(state_, ex_, lo);
  const Manifest& m = loaded_->manifest;
  Diagnostics w = compare_run(m, facts_, dtype_name(state_.precision()));
  w.append(loaded_->warnings);
  if (say_) {
    for (const auto& x : w.all()) std::fprintf(say_, "%s\n", format_diagnostic(x).c_str());
    std::fprintf(say_,
                 "loaded checkpoint %s: step %" PRId64 ", saved at world size %d stage %d, now %d / %d; this rank read "
                 "%.1f MiB from %zu rank file(s) in %.2f s\n",
                 loaded_->tag_dir.c_str(), m.step(), m.world_size, m.stage, state_.world_size(), state_.stage(),
                 double(loaded_->bytes_read) / double(1 << 20), loaded_->files_read.size(), loaded_->seconds);
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
